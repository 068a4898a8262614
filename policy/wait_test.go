package policy

import (
	"strings"
	"testing"
	"time"
)

func TestRulesFileWaitReplicas(t *testing.T) {
	t.Parallel()
	rules := "policies:\n  - name: w\n    algorithm: gcra\n    limit: 5\n    period: 1s\n    wait_replicas: %s\n"
	ps, err := ParseRules("r.yaml", []byte(strings.Replace(rules, "%s", "2", 1)))
	if err != nil || len(ps) != 1 || ps[0].WaitReplicas != 2 {
		t.Fatalf("wait_replicas 2: %v %v", ps, err)
	}
	for _, tc := range []struct{ value, want string }{
		{"-1", "r.yaml:6: policies[0] (w): field wait_replicas: must be 0 to 1000, got -1"},
		{"1001", "r.yaml:6: policies[0] (w): field wait_replicas: must be 0 to 1000, got 1001"},
		{"two", `r.yaml:6: policies[0] (w): field wait_replicas: must be a whole number, got "two"`},
	} {
		t.Run(tc.value, func(t *testing.T) {
			_, err := ParseRules("r.yaml", []byte(strings.Replace(rules, "%s", tc.value, 1)))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
		})
	}
}

func TestWaitReplicasLookup(t *testing.T) {
	t.Parallel()
	s, _, _ := newTest(t,
		Policy{Name: "w", Algorithm: GCRA, Limit: 5, Period: time.Second, WaitReplicas: 2},
		Policy{Name: "n", Algorithm: GCRA, Limit: 5, Period: time.Second})
	for name, want := range map[string]int{"w": 2, "n": 0, "unknown": 0} {
		if got := s.WaitReplicas([]byte(name)); got != want {
			t.Errorf("WaitReplicas(%s) = %d, want %d", name, got, want)
		}
	}
	if err := s.Set(Policy{Name: "w", Algorithm: GCRA, Limit: 5, Period: time.Second, WaitReplicas: -1}); err == nil {
		t.Fatal("a negative wait_replicas was accepted")
	}
	var b strings.Builder
	s.AppendInfo(&b)
	info := b.String()
	if !strings.Contains(info, "policy_w:algorithm=gcra,limit=5,period=1s,burst=5,shadow=0,source=runtime,admitted=0,denied=0,shadow_denied=0,wait_replicas=2\r\n") ||
		!strings.Contains(info, "policy_n:algorithm=gcra,limit=5,period=1s,burst=5,shadow=0,source=runtime,admitted=0,denied=0,shadow_denied=0\r\n") {
		t.Fatalf("INFO:\n%s", info)
	}
}

// wait_replicas survives a snapshot; a snapshot written before the field
// existed loads with none.
func TestWaitReplicasSurvivesASnapshot(t *testing.T) {
	t.Parallel()
	s, _, _ := newTest(t, Policy{Name: "w", Algorithm: TokenBucket, Limit: 5, Period: time.Second, WaitReplicas: 3})
	b, err := s.MarshalRuntime()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"wait_replicas":3`) {
		t.Fatalf("section %s", b)
	}
	s2, _, _ := newTest(t)
	if err := s2.UnmarshalRuntime(b); err != nil {
		t.Fatal(err)
	}
	if in, ok := s2.Get("w"); !ok || in.WaitReplicas != 3 {
		t.Fatalf("restored %+v", in)
	}
	old := `{"version":1,"policies":[{"name":"w","algorithm":"gcra","limit":5,"period_ns":1000000000}]}`
	if err := s2.UnmarshalRuntime([]byte(old)); err != nil {
		t.Fatal(err)
	}
	if in, ok := s2.Get("w"); !ok || in.WaitReplicas != 0 {
		t.Fatalf("an old section restored %+v", in)
	}
}
