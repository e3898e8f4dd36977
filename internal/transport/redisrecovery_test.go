package transport

import (
	"context"
	"fmt"
	"testing"
)

// TestAppendHealsSeqBehindLog (issue 7, point 6): a session hash whose
// gseq fell below its log's last entry (written back from a copy whose
// position lagged) made every append fail: the XADD was refused after
// the script had already bumped gseq and recorded the retry token, so
// resource updates acknowledged to their origin were lost. The append
// takes the seq after the log's top and delivers.
func TestAppendHealsSeqBehindLog(t *testing.T) {
	for _, gseq := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("gseq %d below 3 logged", gseq), func(t *testing.T) {
			rdb := testRedis(t, testRedisAddr)
			prefix := testPrefix(t, rdb)
			a := replica(t, rdb, prefix)
			sid := a.initialize(t)
			a.subscribe(t, sid, "test://seq")
			for range 3 {
				publish(t, "test://seq", a)
			}
			logged(t, rdb, prefix, sid, 3)
			key := prefix + "cs:{" + sid + "}"
			rdb.HSet(context.Background(), key, "gseq", gseq)
			publish(t, "test://seq", a)
			logged(t, rdb, prefix, sid, 4)
			g := a.openGET(t, sid, "Last-Event-ID", "g-3")
			if ev, m := g.nextMessage(t); ev.ID != "g-4" || resourceUpdatedURI(t, m) != "test://seq" {
				t.Fatalf("the update after gseq fell behind: got %+v, want g-4", ev)
			}
			if n, _ := rdb.HGet(context.Background(), key, "gseq").Int(); n != 4 {
				t.Fatalf("gseq %d after the append, want 4", n)
			}
		})
	}
}
