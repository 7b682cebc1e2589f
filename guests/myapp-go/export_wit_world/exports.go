// Package export_wit_world is the component glue: the contract's reconcile and convert exports (world
// converting-reconciler) over the myapp package. wit-bindgen's Go generator names this package and
// calls these two functions from the //go:wasmexport wrappers it generates (wit_exports.go).
//
// Nothing is logged on success (the hot path); an error is also logged at warn. The request's related
// objects are not read: MyApp depends on none. Each export starts with the kit's Guard: garbage
// collected where the component model allows it, a panic recovered into an err answer.
package export_wit_world

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"

	"wit_component/myapp"
	"wit_component/reconcile_guest_log"
	"wit_component/reconcile_guest_types"
	"wit_component/reconcilekit"
)

func Reconcile(req reconcile_guest_types.Request) (result witTypes.Result[reconcile_guest_types.Response, string]) {
	defer reconcilekit.Guard(&result)()
	out, err := myapp.Reconcile(req.Parent, req.Children, req.Finalizing)
	if err != nil {
		return witTypes.Err[reconcile_guest_types.Response](warn(err))
	}
	status := witTypes.None[string]()
	if out.Status != nil {
		status = witTypes.Some(*out.Status)
	}
	return witTypes.Ok[reconcile_guest_types.Response, string](reconcile_guest_types.Response{
		Children:            out.Children,
		Status:              status,
		RequeueAfterSeconds: witTypes.None[uint32](),
		Finalized:           out.Finalized,
	})
}

func Convert(object string, toAPIVersion string) (result witTypes.Result[string, string]) {
	defer reconcilekit.Guard(&result)()
	converted, err := myapp.Convert(object, toAPIVersion)
	if err != nil {
		return witTypes.Err[string](warn(err))
	}
	return witTypes.Ok[string, string](converted)
}

// warn logs an error at warn and returns its message, the err answer.
func warn(err error) string {
	reconcile_guest_log.Emit(reconcile_guest_log.Level_Warn, err.Error())
	return err.Error()
}
