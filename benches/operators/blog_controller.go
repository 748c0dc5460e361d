// The Kubebuilder side of `cargo bench --bench operators`: the reconcile a Kubebuilder user
// writes for the same job as kopgen's scaffolded Blog controller (a ConfigMap child with a
// controller owner reference, an event when it is created or updated, a Ready condition with
// the observed generation), in controller-runtime's idioms: CreateOrUpdate from the cache,
// Owns, and the generation predicate. benches/operators/build-go-operator.sh copies it over
// the file `kubebuilder create api` scaffolds.
package controller

import (
	"context"
	"fmt"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	appsv1 "example.com/gobench/api/v1"
)

// BlogReconciler reconciles a Blog object
type BlogReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder recorder.EventRecorder
}

// +kubebuilder:rbac:groups=apps.example.com,resources=blogs,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.example.com,resources=blogs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=core,resources=configmaps,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

func (r *BlogReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var blog appsv1.Blog
	if err := r.Get(ctx, req.NamespacedName, &blog); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: blog.Name, Namespace: blog.Namespace}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels["app.kubernetes.io/managed-by"] = "gobench"
		data := map[string]string{}
		if blog.Spec.Foo != nil {
			data["foo"] = *blog.Spec.Foo
		}
		cm.Data = data
		return controllerutil.SetControllerReference(&blog, cm, r.Scheme)
	})
	ready := metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "Reconciled",
		Message: "all children are up to date", ObservedGeneration: blog.Generation,
	}
	if err != nil {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "ApiError", err.Error()
	} else if op != controllerutil.OperationResultNone {
		r.Recorder.Eventf(&blog, nil, corev1.EventTypeNormal, string(op), "Reconcile",
			fmt.Sprintf("%s ConfigMap %s/%s", op, cm.Namespace, cm.Name))
	}
	if meta.SetStatusCondition(&blog.Status.Conditions, ready) || blog.Status.ObservedGeneration != blog.Generation {
		blog.Status.ObservedGeneration = blog.Generation
		if updateErr := r.Status().Update(ctx, &blog); updateErr != nil && err == nil {
			err = updateErr
		}
	}
	return ctrl.Result{}, err
}

// SetupWithManager sets up the controller with the Manager. BENCH_MAX_CONCURRENT_RECONCILES
// raises controller-runtime's default of one reconcile at a time, as kopgen's
// --max-concurrent-reconciles does, so that both can be compared at the same setting.
func (r *BlogReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Recorder = mgr.GetEventRecorder("blog-controller")
	options := controller.Options{}
	if n, err := strconv.Atoi(os.Getenv("BENCH_MAX_CONCURRENT_RECONCILES")); err == nil {
		options.MaxConcurrentReconciles = n
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&appsv1.Blog{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.ConfigMap{}).
		Named("blog").
		WithOptions(options).
		Complete(r)
}
