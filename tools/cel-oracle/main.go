// Command cel-oracle evaluates CEL expressions as the kube-apiserver's admission policies do
// (k8s.io/apiserver's policy compiler over its base environment), for the differential tests
// of apiserver-kit's CEL layer. It reads one JSON request a line on stdin and writes one JSON
// answer a line on stdout:
//
//	{"expression": "object.spec.weight > 500", "object": {...}, "oldObject": null, "params": null}
//	{"value": {"bool": true}, "cost": 3}
//	{"error": "no such key: weight", "cost": 2}
//	{"compileError": "compilation failed: ERROR: <input>:1:1: undeclared reference to 'x' ..."}
//	{"panic": "runtime error: index out of range [0] with length 0"}
//
// A request's "request" and "namespace" are the variables `request` and `namespaceObject`.
// With "patchTypes": true, the expression is compiled as a MutatingAdmissionPolicy's mutation
// is (the Object and JSONPatch types, `jsonpatch.escapeKey`; "returns": "applyConfiguration"
// or "jsonPatch" requires its return type), and the answer also has its checked
// "outputType" and the value converted as an apply configuration and as a JSON patch are
// ({"json": ...} or {"error": ...}, mutation.go); Object and JSONPatch values are tagged
// {"object": "Object.spec", "fields": {...}} and {"jsonPatch": {"op": ..., ...}}.
// `cel-oracle -declarations` writes instead the signatures of every function the environment
// declares (declarations.go), which apiserver-kit's type checker keeps a copy of.
//
// Values are tagged with their CEL type ({"int": "5"}, {"double": 1.5}, {"list": [...]},
// {"map": [[key, value], ...]}, ...) so that int, uint and double stay apart.
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/mutation"
	"k8s.io/apiserver/pkg/cel/mutation/dynamic"

	"github.com/google/cel-go/cel"
)

type request struct {
	Expression string          `json:"expression"`
	Object     json.RawMessage `json:"object"`
	OldObject  json.RawMessage `json:"oldObject"`
	Params     json.RawMessage `json:"params"`
	Request    json.RawMessage `json:"request"`
	// The namespaceObject variable.
	Namespace json.RawMessage `json:"namespace"`
	// "new" (the default: NewExpressions, as a policy being created) or "stored".
	Environment string `json:"environment"`
	// Whether `authorizer` is declared (it is then unbound: its checks are only compiled).
	Authorizer bool `json:"authorizer"`
	// Whether the expression is compiled as a MutatingAdmissionPolicy's mutation is (the
	// `Object` and `JSONPatch` types, `jsonpatch.escapeKey`): its value is then also converted
	// as an apply configuration and as a JSON patch are (mutation.go).
	PatchTypes bool `json:"patchTypes"`
	// The return types the expression must have: "applyConfiguration" (Object) or
	// "jsonPatch" (list(JSONPatch)); any type when empty.
	Returns string `json:"returns"`
}

type answer struct {
	Value        any    `json:"value,omitempty"`
	Type         string `json:"type,omitempty"`
	Error        string `json:"error,omitempty"`
	CompileError string `json:"compileError,omitempty"`
	Panic        string `json:"panic,omitempty"`
	Cost         *int64 `json:"cost,omitempty"`
	// With patchTypes: the checked output type (cel-go's Type.String()) and the value as an
	// apply configuration and as a JSON patch ({"json": ...} or {"error": "..."}).
	OutputType         string `json:"outputType,omitempty"`
	ApplyConfiguration any    `json:"applyConfiguration,omitempty"`
	JSONPatch          any    `json:"jsonPatch,omitempty"`
}

type expression string

func (e expression) GetExpression() string    { return string(e) }
func (e expression) ReturnTypes() []*cel.Type { return []*cel.Type{cel.AnyType} }

// activation resolves the admission variables as the policy plugins bind them.
type activation map[string]any

func (a activation) ResolveName(name string) (any, bool) { v, ok := a[name]; return v, ok }
func (a activation) Parent() interpreter.Activation      { return nil }

func main() {
	base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	if len(os.Args) == 2 && os.Args[1] == "-declarations" {
		env, err := base.Env(environment.NewExpressions)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cel-oracle: %v\n", err)
			os.Exit(1)
		}
		printDeclarations(env, os.Stdout)
		return
	}
	compiler := plugincel.NewCompiler(base)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintf(os.Stderr, "cel-oracle: bad request: %v\n", err)
			os.Exit(2)
		}
		if err := out.Encode(evaluate(compiler, req)); err != nil {
			os.Exit(1)
		}
	}
}

func evaluate(compiler plugincel.Compiler, req request) (result answer) {
	// cel-go panics on a few expressions (its homogeneous-literal validator on `[?x]` of a dyn
	// x): the answer says so, and the next request is answered.
	defer func() {
		if p := recover(); p != nil {
			result = answer{Panic: fmt.Sprint(p)}
		}
	}()
	envType := environment.NewExpressions
	if req.Environment == "stored" {
		envType = environment.StoredExpressions
	}
	options := plugincel.OptionalVariableDeclarations{
		HasParams: true, HasAuthorizer: req.Authorizer, HasPatchTypes: req.PatchTypes,
	}
	compiled := compiler.CompileCELExpression(accessor(req), options, envType)
	if compiled.Error != nil {
		return answer{CompileError: compiled.Error.Error()}
	}
	vars := activation{}
	for name, raw := range map[string]json.RawMessage{
		"object": req.Object, "oldObject": req.OldObject, "params": req.Params,
		"request": req.Request, "namespaceObject": req.Namespace,
	} {
		vars[name] = unstructured(raw)
	}
	vars["variables"] = map[string]any{}
	val, details, err := compiled.Program.Eval(vars)
	var cost *int64
	if details != nil && details.ActualCost() != nil {
		c := int64(*details.ActualCost())
		cost = &c
	}
	if err != nil {
		return answer{Error: err.Error(), Cost: cost}
	}
	result = answer{Value: tagged(val), Type: val.Type().(ref.Type).TypeName(), Cost: cost}
	if req.PatchTypes {
		result.OutputType = compiled.OutputType.String()
		result.ApplyConfiguration = converted(applyConfiguration(val))
		result.JSONPatch = converted(jsonPatch(val))
	}
	return result
}

// unstructured decodes JSON as the kube-apiserver decodes an object: integers as int64,
// other numbers as float64; absent or null is a CEL null.
func unstructured(raw json.RawMessage) any {
	if len(raw) == 0 || string(raw) == "null" {
		return types.NullValue
	}
	var v any
	if err := utiljson.Unmarshal(raw, &v); err != nil {
		fmt.Fprintf(os.Stderr, "cel-oracle: bad value: %v\n", err)
		os.Exit(2)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// tagged writes a CEL value with its type, recursively.
func tagged(v ref.Val) any {
	switch v := v.(type) {
	case *dynamic.ObjectVal:
		return taggedObject(v)
	case *mutation.JSONPatchVal:
		return taggedPatch(v)
	case types.Null:
		return map[string]any{"null": nil}
	case types.Bool:
		return map[string]any{"bool": bool(v)}
	case types.Int:
		return map[string]any{"int": strconv.FormatInt(int64(v), 10)}
	case types.Uint:
		return map[string]any{"uint": strconv.FormatUint(uint64(v), 10)}
	case types.Double:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return map[string]any{"double": strconv.FormatFloat(f, 'g', -1, 64)}
		}
		return map[string]any{"double": f}
	case types.String:
		return map[string]any{"string": string(v)}
	case types.Bytes:
		return map[string]any{"bytes": base64.StdEncoding.EncodeToString(v)}
	case types.Timestamp:
		return map[string]any{"timestamp": v.Time.UTC().Format("2006-01-02T15:04:05.999999999Z07:00")}
	case types.Duration:
		return map[string]any{"duration": v.Duration.String()}
	case ref.Type:
		return map[string]any{"type": v.TypeName()}
	case *types.Optional:
		if !v.HasValue() {
			return map[string]any{"optional": nil}
		}
		return map[string]any{"optional": tagged(v.GetValue())}
	}
	if list, ok := v.(traits.Lister); ok {
		items := []any{}
		for it := list.Iterator(); it.HasNext() == types.True; {
			items = append(items, tagged(it.Next()))
		}
		return map[string]any{"list": items}
	}
	if m, ok := v.(traits.Mapper); ok {
		entries := [][2]any{}
		for it := m.Iterator(); it.HasNext() == types.True; {
			key := it.Next()
			entries = append(entries, [2]any{tagged(key), tagged(m.Get(key))})
		}
		sort.Slice(entries, func(i, j int) bool {
			a, _ := json.Marshal(entries[i][0])
			b, _ := json.Marshal(entries[j][0])
			return string(a) < string(b)
		})
		return map[string]any{"map": entries}
	}
	// Go's %v of a struct holding a function prints its address: dropped, it varies by build.
	text := funcAddress.ReplaceAllString(fmt.Sprint(v.Value()), "")
	return map[string]any{"opaque": v.Type().(ref.Type).TypeName(), "string": text}
}

var funcAddress = regexp.MustCompile(` 0x[0-9a-f]+`)
