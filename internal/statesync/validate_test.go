package statesync

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// joinedErrors returns the error strings of an errors.Join, one per
// problem, checking that each is a *PolicyError.
func joinedErrors(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Validate error %T is not an errors.Join", err)
	}
	var out []string
	for _, e := range j.Unwrap() {
		var pe *PolicyError
		if !errors.As(e, &pe) {
			t.Fatalf("joined error %T is not a *PolicyError: %v", e, e)
		}
		out = append(out, e.Error())
	}
	return out
}

// TestValidate_FailFast checks the seed's "Fail-fast validation: All
// policies and defaults are validated at construction time": every problem
// is reported at once, each naming the policy's index, the field and the
// reason.
func TestValidate_FailFast(t *testing.T) {
	ok := Policy{Match: "a.b", CacheControl: NoStore}
	tooManyInvalidates := make([]string, MaxInvalidates+1)
	for i := range tooManyInvalidates {
		tooManyInvalidates[i] = fmt.Sprintf("p%d", i)
	}
	tooManyPolicies := slices.Repeat([]Policy{ok}, MaxPolicies+1)
	tooManyPolicies[MaxPolicies] = Policy{} // beyond the bound: not validated

	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"empty match", Config{Policies: []Policy{ok, {CacheControl: NoStore}}},
			[]string{"stateSync.policies[1].match: must not be empty"}},
		{"empty segment", Config{Policies: []Policy{{Match: "sprints..get", CacheControl: NoStore}}},
			[]string{`stateSync.policies[0].match: "sprints..get" has an empty segment`}},
		{"leading dot", Config{Policies: []Policy{{Match: ".sprints", CacheControl: NoStore}}},
			[]string{`stateSync.policies[0].match: ".sprints" must not start or end with a dot`}},
		{"trailing dot", Config{Policies: []Policy{{Match: "sprints.", CacheControl: NoStore}}},
			[]string{`stateSync.policies[0].match: "sprints." must not start or end with a dot`}},
		{"partial wildcard", Config{Policies: []Policy{{Match: "sprints.g*t", CacheControl: NoStore}}},
			[]string{`stateSync.policies[0].match: "sprints.g*t": segment "g*t" must be "*", "**" or letters, digits, '_' and '-'`}},
		{"triple star", Config{Policies: []Policy{{Match: "***", CacheControl: NoStore}}},
			[]string{`stateSync.policies[0].match: "***": segment "***" must be "*", "**" or letters, digits, '_' and '-'`}},
		{"pattern too long", Config{Policies: []Policy{{Match: strings.Repeat("a", MaxPatternLen+1), CacheControl: NoStore}}},
			[]string{"stateSync.policies[0].match: is 257 bytes long, more than the maximum of 256"}},
		{"max-age directive", Config{Policies: []Policy{ok, ok, {Match: "x", CacheControl: "max-age"}}},
			[]string{`stateSync.policies[2].cacheControl: "max-age" is not no-store or immutable`}},
		{"directive case matters", Config{Policies: []Policy{{Match: "x", CacheControl: "No-Store"}}},
			[]string{`stateSync.policies[0].cacheControl: "No-Store" is not no-store or immutable`}},
		{"invalid defaults", Config{Defaults: Defaults{CacheControl: "max-age"}},
			[]string{`stateSync.defaults.cacheControl: "max-age" is not no-store or immutable`}},
		{"empty invalidates pattern", Config{Policies: []Policy{{Match: "x", Invalidates: []string{"a.*", ""}}}},
			[]string{"stateSync.policies[0].invalidates[1]: must not be empty"}},
		{"invalid invalidates pattern", Config{Policies: []Policy{{Match: "x", Invalidates: []string{"a.*", "b.c?"}}}},
			[]string{`stateSync.policies[0].invalidates[1]: "b.c?": segment "c?" must be "*", "**" or letters, digits, '_' and '-'`}},
		{"repeated invalidates pattern", Config{Policies: []Policy{{Match: "x", Invalidates: []string{"a.*", "b", "a.*"}}}},
			[]string{`stateSync.policies[0].invalidates[2]: "a.*" repeats invalidates[0]`}},
		{"useless policy", Config{Policies: []Policy{ok, {Match: "x"}}},
			[]string{"stateSync.policies[1]: has neither cacheControl nor invalidates, so it would change nothing; give it a cacheControl or a pattern to invalidate, or remove it"}},
		{"explicitly empty invalidates is useless alone", Config{Policies: []Policy{{Match: "x", Invalidates: []string{}}}},
			[]string{"stateSync.policies[0]: has neither cacheControl nor invalidates, so it would change nothing; give it a cacheControl or a pattern to invalidate, or remove it"}},
		{"too many invalidates", Config{Policies: []Policy{{Match: "x", Invalidates: tooManyInvalidates}}},
			[]string{"stateSync.policies[0].invalidates: 65 patterns exceed the maximum of 64; those from here on are not validated"}},
		{"too many policies", Config{Policies: tooManyPolicies},
			[]string{"stateSync.policies[1000]: 1001 policies exceed the maximum of 1000; those from here on are not validated"}},
		{"every problem at once", Config{
			Defaults: Defaults{CacheControl: "private"},
			Policies: []Policy{
				{Match: "", CacheControl: "max-age", Invalidates: []string{".x"}},
				ok,
				{Match: "a.b"},
			},
		}, []string{
			`stateSync.defaults.cacheControl: "private" is not no-store or immutable`,
			"stateSync.policies[0].match: must not be empty",
			`stateSync.policies[0].cacheControl: "max-age" is not no-store or immutable`,
			`stateSync.policies[0].invalidates[0]: ".x" must not start or end with a dot`,
			"stateSync.policies[2]: has neither cacheControl nor invalidates, so it would change nothing; give it a cacheControl or a pattern to invalidate, or remove it",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if got := joinedErrors(t, err); !slices.Equal(got, tt.want) {
				t.Errorf("Validate errors:\n got %q\nwant %q", got, tt.want)
			}
			if _, nerr := NewEngine(tt.cfg); nerr == nil || nerr.Error() != err.Error() {
				t.Errorf("NewEngine error = %v, want Validate's", nerr)
			}
		})
	}
}

// TestValidate_PolicyErrorFields checks that a program can read the index
// and field of a problem, not only its message.
func TestValidate_PolicyErrorFields(t *testing.T) {
	err := Config{Policies: []Policy{{Match: "a", CacheControl: NoStore}, {Match: "b", Invalidates: []string{"ok", "x..y"}}}}.Validate()
	var pe *PolicyError
	if !errors.As(err, &pe) {
		t.Fatalf("Validate = %v, want a *PolicyError", err)
	}
	if pe.Index != 1 || pe.Field != "invalidates[1]" || pe.Reason != `"x..y" has an empty segment` {
		t.Errorf("PolicyError = %+v", *pe)
	}
}

// TestValidate_ValidConfigs checks that the seed's own configurations, and
// the edge cases this package allows, pass.
func TestValidate_ValidConfigs(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"zero config", Config{}},
		{"quick start", seedQuickStart()},
		{"mixed static and dynamic", seedMixed()},
		{"defaults only", Config{Defaults: Defaults{CacheControl: Immutable}}},
		{"empty invalidates with a directive", Config{Policies: []Policy{{Match: "x", CacheControl: NoStore, Invalidates: []string{}}}}},
		{"longest pattern", Config{Policies: []Policy{{Match: strings.Repeat("a", MaxPatternLen), CacheControl: NoStore}}}},
		{"most policies and patterns", Config{Policies: slices.Repeat([]Policy{{Match: "**", Invalidates: manyPatterns(MaxInvalidates)}}, MaxPolicies)}},
		{"redundant stars", Config{Policies: []Policy{{Match: "**.**.*", CacheControl: Immutable}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); err != nil {
				t.Errorf("Validate = %v", err)
			}
		})
	}
}

func manyPatterns(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("d%d.*", i)
	}
	return out
}

// seedQuickStart is the configuration of the seed's "Quick Start".
func seedQuickStart() Config {
	return Config{
		Defaults: Defaults{CacheControl: NoStore},
		Policies: []Policy{
			{Match: "sprints.update", Invalidates: []string{"sprints.*"}},
			{Match: "sprints.create", Invalidates: []string{"sprints.*"}},
			{Match: "sprints.delete", Invalidates: []string{"sprints.*"}},
			{Match: "tasks.update", Invalidates: []string{"tasks.*", "sprints.*"}},
			{Match: "countries.*", CacheControl: Immutable},
		},
	}
}

// seedMixed is the configuration of the seed's "Mixed Static and Dynamic".
func seedMixed() Config {
	return Config{
		Defaults: Defaults{CacheControl: NoStore},
		Policies: []Policy{
			{Match: "countries.*", CacheControl: Immutable},
			{Match: "currencies.*", CacheControl: Immutable},
			{Match: "timezones.*", CacheControl: Immutable},
			{Match: "sprints.create", Invalidates: []string{"sprints.*"}},
			{Match: "sprints.update", Invalidates: []string{"sprints.*"}},
			{Match: "sprints.delete", Invalidates: []string{"sprints.*"}},
			{Match: "tasks.update", Invalidates: []string{"tasks.*", "sprints.*"}},
		},
	}
}

// TestConfig_ZeroOverhead checks the seed's "Zero Overhead": a server can
// tell that a configuration does nothing and then not install the layer.
func TestConfig_ZeroOverhead(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want bool
	}{
		{Config{}, false},
		{Config{Policies: []Policy{}}, false},
		{Config{Defaults: Defaults{CacheControl: NoStore}}, true},
		{seedQuickStart(), true},
	} {
		if got := tt.cfg.Enabled(); got != tt.want {
			t.Errorf("%+v.Enabled() = %v, want %v", tt.cfg, got, tt.want)
		}
	}
}
