// Package reconcilekit is what every Go reconciler's exports need around the generated bindings; the
// Go guest kit (componentize.sh) puts it beside them, as wit_component/reconcilekit. Each export
// starts with
//
//	defer reconcilekit.Guard(&result)()
//
// which does two things.
//
// It collects garbage where the component model allows it. The Go runtime starts a collection when an
// allocation crosses the heap goal, and collecting calls WASI imports (clocks, the scheduler). The
// host allocates the arguments of every call through the guest's cabi_realloc, where a component may
// not call imports: a collection that starts there traps ("cannot leave component instance"). A fresh
// instance never gets that far, but an instance the host reuses (--reuse-instance-calls) did after a
// few hundred calls. So the runtime's own trigger is off (SetGCPercent(-1), at init), and Guard
// collects at the start of an export, where imports are allowed, once the calls since the last
// collection allocated collectAfter bytes: Go's own minimum heap goal.
//
// It turns a panic into an err answer, logged at error. Unrecovered, the Go runtime prints the panic
// to stderr and exits, which the host reports as a trap.
package reconcilekit

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"

	witTypes "go.bytecodealliance.org/pkg/wit/types"

	"wit_component/reconcile_guest_log"
)

// collectAfter is how many bytes the calls may allocate between two collections.
const collectAfter = 4 << 20

// allocated reads the bytes allocated since the instance started.
var allocated = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}

// collectedAt is what allocated read after the last collection.
var collectedAt uint64

func init() {
	debug.SetGCPercent(-1)
}

// Guard collects garbage if the calls since the last collection allocated enough, and returns what
// the export defers: the recovery of a panic into an err answer.
func Guard[T any](result *witTypes.Result[T, string]) func() {
	metrics.Read(allocated)
	if allocated[0].Value.Uint64()-collectedAt >= collectAfter {
		runtime.GC()
		metrics.Read(allocated)
		collectedAt = allocated[0].Value.Uint64()
	}
	return func() {
		if r := recover(); r != nil {
			message := fmt.Sprintf("panic: %v", r)
			reconcile_guest_log.Emit(reconcile_guest_log.Level_Error, message)
			*result = witTypes.Err[T](message)
		}
	}
}
