// Package snapshot classifies executor pods into the states the allocator
// and the lifecycle manager act on, and keeps the current set of the
// application's executor pods, fed by one informer.
package snapshot
