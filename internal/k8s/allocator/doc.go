// Package allocator decides how many executor pods to create and which to
// delete, and applies those decisions through a small pod client.
//
// The decision is a pure function, Decide, of the policy's remembered State,
// an Input (the time, the target, the latest pod snapshot, the executors the
// scheduler backend knows, the outcomes of last round's API calls) and the
// Options. It returns a Plan and does no IO, so every rule is tested with
// constructed snapshots and no clock. Allocator is the thin loop around it:
// it runs Decide at most once per batch delay, creates and deletes pods, and
// feeds the outcomes into the next round.
//
// Two policies share the bookkeeping:
//
//   - spark reproduces Spark's ExecutorPodsAllocator: at most batch.size
//     serial creates per round, and no new round while a pod of the previous
//     one is unseen.
//   - adaptive (the default) reaches the target as fast as the cluster admits
//     pods and no faster: concurrent creates, rounds that double while the
//     previous round was observed and scheduled, a pending cap that grows
//     with the running executors, halving and back-off when the cluster or
//     the API server pushes back. Its first round, and the cap's floor, is
//     FirstRound (the client's burst) until the cluster first pushes back
//     (an Unschedulable or queue-held pod, a failed create, a quota), and
//     BatchSize from then on. So an application of up to FirstRound
//     executors is created in one round, as fast as raw parallel creates,
//     where a ramp from BatchSize took four rounds for 100; and a cluster
//     that cannot start pods is left at most FirstRound pending pods, then
//     gets the careful ramp.
//
// Both track expectations like the Kubernetes Job controller: a pod being
// created counts as pending from the decision until a snapshot shows it (or
// its create fails, or PodCreationTimeout passes), so a stale cache never
// double-creates and a lost event never stalls allocation; a pod being
// deleted never counts toward the target. API errors that retrying cannot fix
// (invalid spec, forbidden, bad request) fail the application with the API
// server's message; an exhausted quota is reported once and tried again
// when a pod ends, the target changes or QuotaRetry has passed.
package allocator
