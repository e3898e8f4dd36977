// Package statesync implements the State Sync layer of its specification,
// docs/spec/state-sync.md ("the seed" in this package's comments):
// RFC 7234-inspired cache signals that counter an LLM's "Temporal
// Blindness" and "Causal State Drift".
//
// The policy engine is pure: no I/O, no transport, no package-level
// mutable state. Its Notifier delivers in-process in every deployment:
// with several replicas the transport itself writes an update into the
// Redis log of every subscribed client session, so no update needs to
// cross to another replica here. The server wires the layer in two places
// of the protocol pipeline:
//
//   - tools/list: Engine.DecorateDescription (or Engine.DecorateTools)
//     appends " [Cache-Control: X]" to each tool's description ("Cache-Control
//     Decoration");
//   - tools/call: Notifier.AfterCall (over Layer.AfterCall) prepends a "[System: Cache invalidated for
//     ... — caused by ...]" block to a successful result and notifies the
//     observers ("Causal Invalidation", "Observability Hooks"). StaleURI gives
//     the URI of the notifications/resources/updated for each pattern
//     ("notificationSink").
//
// # Structure
//
// One file per responsibility, after the seed's "Architecture":
//
//   - validate.go: the configuration types and fail-fast validation
//     (PolicyValidator);
//   - glob.go: iterative, bounded dot-separated glob matching (GlobMatcher);
//   - engine.go: first-match-wins resolution (PolicyEngine), and cache.go:
//     the bounded, lock-free-read cache behind it and the decorator;
//   - decorate.go: description decoration (DescriptionDecorator);
//   - causal.go: the isError guard, the prepended block and the observers
//     (CausalEngine, ResponseDecorator, StateSyncLayer);
//   - notify.go: the Notifier, which turns entity changes and invalidated
//     patterns into notifications/resources/updated;
//   - overlap.go: static policy overlap detection (detectOverlaps).
//
// # Decisions where the seed is silent
//
//   - A matched policy without a cacheControl inherits defaults.cacheControl
//     ("Every tool gets no-store unless overridden"): a mutation policy that
//     only declares invalidates is still decorated with the default.
//   - Names and patterns are dot-separated lists of non-empty segments; an
//     empty name, or one with an empty segment ("a..b", ".a", "a."), matches
//     no pattern, not even "**". So "**" matches every well-formed name.
//   - An explicitly empty invalidates list is allowed and means "invalidates
//     nothing"; a policy left with neither a cacheControl nor a pattern to
//     invalidate is rejected, as is a repeated pattern in one list.
//   - DetectOverlaps reports full shadowing (the later policy can never win)
//     and partial overlaps where neither pattern contains the other, but not
//     the seed's own idiom of a specific policy before a general one.
package statesync
