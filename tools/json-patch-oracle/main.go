// Command json-patch-oracle applies JSON patches (RFC 6902) with gopkg.in/evanphx/json-patch.v4,
// as the kube-apiserver's MutatingAdmissionPolicy applies its JSONPatch mutations
// (k8s.io/apiserver's pkg/admission/plugin/policy/mutating/patch), for the differential tests
// of apiserver-kit's machinery::json_patch_v4. It reads one JSON request a line on stdin and
// writes one JSON answer a line on stdout:
//
//	{"doc": {"a": 1}, "patch": [{"op": "add", "path": "/b", "value": 2}]}
//	{"doc": {"a": 1, "b": 2}}
//	{"error": "testing value /a failed: test failed", "testFailed": true, "panic": false}
//	{"error": "runtime error: invalid memory address or nil pointer dereference", "testFailed": false, "panic": true}
//
// Each operation becomes a jsonpatch.Operation as Kubernetes builds one: every field present
// is a non-nil raw message (so "value": null is the JSON null, not a missing value); an
// operation that is not a JSON object has no fields. "testFailed" is errors.Is(err,
// jsonpatch.ErrTestFailed); a panic of the library is recovered and reported with its value.
//
// A patch is applied several times: where the outcome depends on Go's random map iteration
// order (a test comparing objects whose members' comparisons panic or not), the other
// outcomes seen are listed under "otherOutcomes".
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// How many times each patch is applied to see outcomes that depend on map iteration order.
const runs = 16

type request struct {
	Doc   json.RawMessage   `json:"doc"`
	Patch []json.RawMessage `json:"patch"`
}

type outcome struct {
	Doc        json.RawMessage `json:"doc,omitempty"`
	Error      *string         `json:"error,omitempty"`
	TestFailed *bool           `json:"testFailed,omitempty"`
	Panic      *bool           `json:"panic,omitempty"`
}

type answer struct {
	outcome
	OtherOutcomes []outcome `json:"otherOutcomes,omitempty"`
}

// operation builds what Kubernetes builds: a raw message for each field present.
func operation(raw json.RawMessage) jsonpatch.Operation {
	op := jsonpatch.Operation{}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return op
	}
	for name, value := range fields {
		op[name] = &value
	}
	return op
}

func failure(message string, testFailed, panicked bool) outcome {
	return outcome{Error: &message, TestFailed: &testFailed, Panic: &panicked}
}

func apply(doc []byte, patch jsonpatch.Patch) (result outcome) {
	defer func() {
		if r := recover(); r != nil {
			result = failure(fmt.Sprint(r), false, true)
		}
	}()
	out, err := patch.Apply(doc)
	if err != nil {
		return failure(err.Error(), errors.Is(err, jsonpatch.ErrTestFailed), false)
	}
	return outcome{Doc: out}
}

func answerTo(line []byte) answer {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return answer{outcome: failure("bad request: "+err.Error(), false, false)}
	}
	patch := jsonpatch.Patch{}
	for _, raw := range req.Patch {
		patch = append(patch, operation(raw))
	}
	first := apply(req.Doc, patch)
	seen := map[string]bool{key(first): true}
	var others []outcome
	for i := 1; i < runs; i++ {
		next := apply(req.Doc, patch)
		if !seen[key(next)] {
			seen[key(next)] = true
			others = append(others, next)
		}
	}
	return answer{outcome: first, OtherOutcomes: others}
}

func key(o outcome) string {
	text, err := json.Marshal(o)
	if err != nil {
		return err.Error()
	}
	return string(text)
}

func main() {
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 1<<30)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for scanner.Scan() {
		text, err := json.Marshal(answerTo(scanner.Bytes()))
		if err != nil {
			text, _ = json.Marshal(failure("unencodable answer: "+err.Error(), false, false))
		}
		out.Write(text)
		out.WriteByte('\n')
	}
	if err := scanner.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
