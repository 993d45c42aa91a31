// Command rules-oracle validates objects by the x-kubernetes-validations rules of a schema as
// the kube-apiserver does for a custom resource (k8s.io/apiextensions-apiserver's schema/cel
// Validator, with ratcheting as CRDValidationRatcheting has it, and the definition's own
// validation of the rules), for the differential tests of apiserver-kit's validation rules. It
// reads one JSON request a line on stdin and writes one JSON answer a line on stdout:
//
//	{"schema": {...}, "object": {...}, "oldObject": {...}}
//	{"errors": ["spec.x: Invalid value: 5: must be even"], "causes": [{"reason": ..., "field": ..., "message": ...}],
//	 "warnings": ["..."]}
//	{"schema": {...}}   (no object: the definition's problems)
//	{"problems": ["spec.versions[0].schema.openAPIV3Schema...: Invalid value: ...: compilation failed: ..."]}
//
// The schema is a resource's openAPIV3Schema (its root the resource's); `oldObject` null or
// missing validates a create.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/warning"
)

type request struct {
	Schema    json.RawMessage `json:"schema"`
	Object    json.RawMessage `json:"object"`
	OldObject json.RawMessage `json:"oldObject"`
}

type cause struct {
	Reason  string `json:"reason"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

type answer struct {
	Errors   []string `json:"errors,omitempty"`
	Causes   []cause  `json:"causes,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	Problems []string `json:"problems,omitempty"`
	Failure  string   `json:"failure,omitempty"`
}

type recorder struct {
	sync.Mutex
	warnings []string
}

func (r *recorder) AddWarning(_, text string) {
	r.Lock()
	defer r.Unlock()
	r.warnings = append(r.warnings, text)
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<20), 64<<20)
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	for in.Scan() {
		var req request
		var a answer
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			a.Failure = err.Error()
		} else {
			a = handle(req)
		}
		if err := out.Encode(a); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func handle(req request) (a answer) {
	defer func() {
		if r := recover(); r != nil {
			a = answer{Failure: fmt.Sprint(r)}
		}
	}()
	var v1 apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(req.Schema, &v1); err != nil {
		return answer{Failure: "schema: " + err.Error()}
	}
	if len(req.Object) == 0 || string(req.Object) == "null" {
		return answer{Problems: problems(&v1)}
	}
	var internal apiextensionsinternal.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, &internal, nil); err != nil {
		return answer{Failure: "conversion: " + err.Error()}
	}
	ss, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return answer{Failure: "structural: " + err.Error()}
	}
	obj, old := decode(req.Object), decode(req.OldObject)
	rec := &recorder{}
	ctx := warning.WithWarningRecorder(context.Background(), rec)
	validator := cel.NewValidator(ss, true, celconfig.PerCallLimit)
	var errs field.ErrorList
	if validator != nil {
		var options []cel.Option
		if old != nil {
			options = append(options, cel.WithRatcheting(common.NewCorrelatedObject(obj, old, &model.Structural{Structural: ss})))
		}
		errs, _ = validator.Validate(ctx, nil, ss, obj, old, celconfig.RuntimeCELCostBudget, options...)
	}
	for _, e := range errs {
		a.Errors = append(a.Errors, e.Error())
		a.Causes = append(a.Causes, cause{Reason: string(e.Type), Field: e.Field, Message: e.ErrorBody()})
	}
	a.Warnings = rec.warnings
	return a
}

// decode reads JSON as the apiserver does (integers int64, other numbers float64).
func decode(raw json.RawMessage) interface{} {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var v interface{}
	if err := utiljson.Unmarshal(raw, &v); err != nil {
		panic(err)
	}
	return v
}

// problems is what the kube-apiserver refuses a CustomResourceDefinition of the schema for.
func problems(schema *apiextensionsv1.JSONSchemaProps) []string {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema},
			}},
		},
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	var internal apiextensionsinternal.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil); err != nil {
		return []string{"conversion: " + err.Error()}
	}
	var out []string
	for _, e := range crdvalidation.ValidateCustomResourceDefinition(context.Background(), &internal) {
		out = append(out, e.Error())
	}
	return out
}
