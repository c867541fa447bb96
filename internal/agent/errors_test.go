package agent

import (
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/rsa-hpc/rsa/internal/gluster"
)

// An agent's failure reaches the daemon with its message and kind, and
// with the gluster command's failure behind it, if any, as a
// *gluster.Error: the daemon tells glusterd's refusals apart by type, not
// by the text of the message.
func TestAnswerCarriesGlusterError(t *testing.T) {
	peersDown := &gluster.Error{Args: []string{"volume", "delete", "rsa-job-8"}, Ret: -1, Errno: 30800, Msg: "Some of the peers are down"}
	staging := &gluster.Error{Args: []string{"volume", "status", "rsa-job-8"}, Ret: -1, Msg: "Staging failed on rsa2. Error: Volume rsa-job-8 is not started"}
	for _, tc := range []struct {
		name      string
		err       error
		code      string
		busy      bool
		gluster   *gluster.Error // what the daemon's side must find; nil: none
		peersDown bool
		failedOn  string
	}{
		{"peers down", fmt.Errorf("deleting volume rsa-job-8: %w", peersDown), codeInternal, false, peersDown, true, ""},
		{"staging failed on a peer", fmt.Errorf("reading the bricks of volume rsa-job-8 from glusterd: %w", staging), codeInternal, false, staging, false, "rsa2"},
		// The text alone is no gluster failure: only the agent's
		// classification travels.
		{"no gluster command", errors.New("Some of the peers are down, says a message"), codeInternal, false, nil, false, ""},
		{"busy", failf(ErrBusy, "the brick of rsa-job-8 is in use"), "busy", true, nil, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			reply(w, nil, tc.err)
			resp := w.Result()
			data, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			got := answerError("rsa1", "DELETE", "/v1/volumes/rsa-job-8", resp, data)
			if got.Msg != tc.err.Error() || got.Code != tc.code || got.Node != "rsa1" || errors.Is(got, ErrBusy) != tc.busy {
				t.Errorf("answer %+v; want message %q, code %s, busy %v", got, tc.err, tc.code, tc.busy)
			}
			var ge *gluster.Error
			found := errors.As(error(got), &ge)
			if found != (tc.gluster != nil) || found && (ge.Msg != tc.gluster.Msg || ge.Errno != tc.gluster.Errno || fmt.Sprint(ge.Args) != fmt.Sprint(tc.gluster.Args)) {
				t.Fatalf("gluster error behind the answer: %+v (found %v); want %+v", ge, found, tc.gluster)
			}
			if errors.Is(got, gluster.ErrPeersDown) != tc.peersDown {
				t.Errorf("errors.Is(answer, gluster.ErrPeersDown) = %v, want %v", !tc.peersDown, tc.peersDown)
			}
			if found {
				if peer, ok := ge.FailedOn(); peer != tc.failedOn || ok != (tc.failedOn != "") {
					t.Errorf("FailedOn() = %q, %v; want %q", peer, ok, tc.failedOn)
				}
			}
			if Transient(got) != tc.busy {
				t.Errorf("Transient(answer) = %v, want %v", Transient(got), tc.busy)
			}
		})
	}
}
