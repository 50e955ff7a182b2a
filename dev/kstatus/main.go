// kstatus prints what kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status),
// the library Flux's health checks and `kapply status` use, concludes
// about each object on stdin: a JSON object, or a List of them (what
// `kubectl get -o json` prints). One JSON line per object:
//
//	{"name":"web","status":"Current","message":"Resource is current"}
//
// Pakket's tests compare it with `kubectl wait --for=condition=Ready` and
// `kubectl instance why`; the verdict is kstatus's own code, not a copy.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type verdict struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	var object map[string]interface{}
	// apimachinery's decoder keeps whole numbers int64, as kstatus reads
	// metadata.generation.
	if err := utiljson.Unmarshal(input, &object); err != nil {
		fail("stdin is not a JSON object: %v", err)
	}
	objects := []map[string]interface{}{object}
	if items, ok := object["items"].([]interface{}); ok {
		objects = objects[:0]
		for _, item := range items {
			if one, ok := item.(map[string]interface{}); ok {
				objects = append(objects, one)
			}
		}
	}
	out := json.NewEncoder(os.Stdout)
	for _, one := range objects {
		u := &unstructured.Unstructured{Object: one}
		result, err := status.Compute(u)
		if err != nil {
			fail("kstatus cannot compute %s: %v", u.GetName(), err)
		}
		if err := out.Encode(verdict{u.GetName(), string(result.Status), result.Message}); err != nil {
			fail("writing: %v", err)
		}
	}
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "kstatus: "+format+"\n", args...)
	os.Exit(1)
}
