package main

// What a MutatingAdmissionPolicy makes of a mutation's value: k8s.io/apiserver's
// patch/smd.go (applyConfigPatcher.Patch up to the merge) and patch/json_patch.go
// (jsonPatcher.evaluatePatchExpression), and the tagged form of the values of the Object and
// JSONPatch types.

import (
	gojson "encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"unsafe"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"google.golang.org/protobuf/types/known/structpb"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/mutation"
	"k8s.io/apiserver/pkg/cel/mutation/dynamic"
)

// accessor is the request's expression with the return types it must have: a mutation's own
// (those of patch.ApplyConfigurationCondition and patch.JSONPatchCondition, whose package
// brings client-go), or any type.
func accessor(req request) plugincel.ExpressionAccessor {
	switch req.Returns {
	case "applyConfiguration":
		return typedExpression{req.Expression, []*cel.Type{types.NewObjectType("Object")}}
	case "jsonPatch":
		return typedExpression{req.Expression, []*cel.Type{cel.ListType(types.NewObjectType("JSONPatch"))}}
	}
	return expression(req.Expression)
}

type typedExpression struct {
	expression string
	returns    []*cel.Type
}

func (e typedExpression) GetExpression() string    { return e.expression }
func (e typedExpression) ReturnTypes() []*cel.Type { return e.returns }

// converted is a conversion's answer: {"json": value} or {"error": "..."}.
func converted(value any, err error) any {
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	return map[string]any{"json": value}
}

// applyConfiguration is smd.go's applyConfigPatcher.Patch up to the merge: the value as the
// unstructured object merged into the request's object, in JSON (unstructuredJSON).
func applyConfiguration(v ref.Val) (any, error) {
	objVal, ok := v.(*dynamic.ObjectVal)
	if !ok {
		return nil, fmt.Errorf("unsupported return type from ApplyConfiguration expression: %v", v.Type())
	}
	err := objVal.CheckTypeNamesMatchFieldPathNames()
	if err != nil {
		return nil, fmt.Errorf("type mismatch: %w", err)
	}
	value, ok := objVal.Value().(map[string]any)
	if !ok {
		return nil, fmt.Errorf("invalid return type: %T", v)
	}
	return unstructuredJSON("", value)
}

// unstructuredJSON is an unstructured value as structured-merge-diff reads it (its
// valueUnstructured: nil, bool, integers but uint64, floats, string, map[string]any, []any),
// in JSON; any other Go value (a uint64, []byte, time.Time, a CEL value left inside a list)
// is refused, where the merge would refuse it, and so are NaN and the infinities, which JSON
// cannot write.
func unstructuredJSON(path string, v any) (any, error) {
	switch v := v.(type) {
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s: unsupported value %v", path, v)
		}
		return v, nil
	case nil, bool, string, int64:
		return v, nil
	case []any:
		items := make([]any, len(v))
		for i, item := range v {
			converted, err := unstructuredJSON(fmt.Sprintf("%s[%d]", path, i), item)
			if err != nil {
				return nil, err
			}
			items[i] = converted
		}
		return items, nil
	case map[string]any:
		fields := make(map[string]any, len(v))
		for _, k := range sortedKeys(v) {
			converted, err := unstructuredJSON(path+"."+k, v[k])
			if err != nil {
				return nil, err
			}
			fields[k] = converted
		}
		return fields, nil
	}
	return nil, fmt.Errorf("%s: unsupported value of type %T", path, v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonPatch is json_patch.go's evaluatePatchExpression after the evaluation: the operations
// of the patch, in JSON.
func jsonPatch(refVal ref.Val) (any, error) {
	iter, ok := refVal.(traits.Lister)
	if !ok {
		return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array")
	}
	result := []any{}
	for it := iter.Iterator(); it.HasNext() == types.True; {
		v := it.Next()
		patchObj, err := v.ConvertToNative(reflect.TypeOf(&mutation.JSONPatchVal{}))
		if err != nil {
			return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch: %w", err)
		}
		op, ok := patchObj.(*mutation.JSONPatchVal)
		if !ok {
			return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of %T", patchObj)
		}
		resultOp := map[string]gojson.RawMessage{}
		resultOp["op"] = gojson.RawMessage(strconv.Quote(op.Op))
		resultOp["path"] = gojson.RawMessage(strconv.Quote(op.Path))
		if len(op.From) > 0 {
			resultOp["from"] = gojson.RawMessage(strconv.Quote(op.From))
		}
		if op.Val != nil {
			if objVal, ok := op.Val.(*dynamic.ObjectVal); ok {
				err := objVal.CheckTypeNamesMatchFieldPathNames()
				if err != nil {
					return nil, fmt.Errorf("type mismatch: %w", err)
				}
			}
			v, err := op.Val.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
			if err != nil {
				return nil, fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
			}
			b, err := gojson.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
			}
			resultOp["value"] = b
		}
		result = append(result, resultOp)
	}
	return result, nil
}

// taggedObject writes an Object value: {"object": type name, "fields": {name: tagged}}.
func taggedObject(v *dynamic.ObjectVal) any {
	fields := map[string]any{}
	for name, value := range unexported[map[string]ref.Val](v, "fields") {
		fields[name] = tagged(value)
	}
	return map[string]any{"object": v.Type().TypeName(), "fields": fields}
}

// taggedPatch writes a JSONPatch value: {"jsonPatch": {"op": ..., "path": ..., "from": ...,
// "value": tagged}}, without the value when it is unset.
func taggedPatch(v *mutation.JSONPatchVal) any {
	fields := map[string]any{"op": v.Op, "path": v.Path, "from": v.From}
	if v.Val != nil {
		fields["value"] = tagged(v.Val)
	}
	return map[string]any{"jsonPatch": fields}
}

// unexported reads the unexported field `name` of the struct `v` points to.
func unexported[T any](v any, name string) T {
	field := reflect.ValueOf(v).Elem().FieldByName(name)
	return reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem().Interface().(T)
}
