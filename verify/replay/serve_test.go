package replay

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	vapccel "github.com/vapc-dev/vapc/cel"
)

// TestOverlayUnknown: an update's body gives the pipeline the values of the stored object the
// State does not know, so that it validates the update as the server did; known fields stay.
func TestOverlayUnknown(t *testing.T) {
	volumeNames := []vapccel.Unknown{
		{Path: objectPath("spec", "volumes", vapccel.AnyStep, "name")},
		{Path: objectPath("spec", "containers", vapccel.AnyStep, "volumeMounts", vapccel.AnyStep, "name")},
	}
	for _, tc := range []struct {
		name         string
		stored, body string
		unknowns     []vapccel.Unknown
		want         string
	}{{
		name:     "the token volume's suffix",
		stored:   `{"spec":{"volumes":[{"name":"kube-api-access-aaaaa"}],"containers":[{"name":"c","image":"x","volumeMounts":[{"name":"kube-api-access-aaaaa"}]}]}}`,
		body:     `{"spec":{"volumes":[{"name":"kube-api-access-bbbbb"}],"containers":[{"name":"c","image":"y","volumeMounts":[{"name":"kube-api-access-bbbbb"}]}]}}`,
		unknowns: volumeNames,
		want:     `{"spec":{"volumes":[{"name":"kube-api-access-bbbbb"}],"containers":[{"name":"c","image":"x","volumeMounts":[{"name":"kube-api-access-bbbbb"}]}]}}`,
	}, {
		name:     "lists of other lengths are left",
		stored:   `{"spec":{"volumes":[{"name":"a"},{"name":"b"}]}}`,
		body:     `{"spec":{"volumes":[{"name":"c"}]}}`,
		unknowns: volumeNames,
		want:     `{"spec":{"volumes":[{"name":"a"},{"name":"b"}]}}`,
	}, {
		name:     "metadata is the request's own business",
		stored:   `{"metadata":{"uid":"1"},"status":{"phase":"Pending"}}`,
		body:     `{"metadata":{"uid":"2"},"status":{"phase":"Running"}}`,
		unknowns: []vapccel.Unknown{{Path: objectPath("metadata", "uid")}, {Path: objectPath("status", "phase")}},
		want:     `{"metadata":{"uid":"1"},"status":{"phase":"Running"}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var got, want any
			if err := json.Unmarshal(overlayUnknown([]byte(tc.stored), []byte(tc.body), tc.unknowns), &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("overlayUnknown (-want +got):\n%s", diff)
			}
		})
	}
}
