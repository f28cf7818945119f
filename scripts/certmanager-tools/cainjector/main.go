// Command cert-manager-cainjector runs cert-manager's CA injector
// (github.com/cert-manager/cert-manager/pkg/controller/cainjector): it
// writes the CA of a Certificate (cert-manager.io/inject-ca-from) or of a
// Secret (cert-manager.io/inject-ca-from-secret) into the caBundle of the
// annotated Mutating- and ValidatingWebhookConfigurations.
//
// Upstream's main package lives in a nested Go module (cmd/cainjector)
// that the Go module proxy does not serve, so scripts/certmanager-tools.sh
// builds this entry point instead: the injection itself (which objects are
// watched, where the CA is read from, how the caBundle is patched) is
// upstream code at the pinned version; this file sets up the
// controller-runtime manager as upstream's cmd/cainjector/app does
// (Secrets read uncached, watched as metadata only), without leader
// election, metrics or health servers.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	apireg "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	"github.com/cert-manager/cert-manager/pkg/util"
)

func main() {
	klog.InitFlags(nil)
	namespace := flag.String("namespace", "", "only inject from Certificates and Secrets in this namespace (default: all)")
	crds := flag.Bool("inject-crds", false, "also inject into CustomResourceDefinitions' conversion webhooks")
	apiservices := flag.Bool("inject-apiservices", false, "also inject into APIServices")
	flag.Parse()
	// controller-runtime registers --kubeconfig on the default flag set.
	kubeconfig := ""
	if f := flag.Lookup("kubeconfig"); f != nil {
		kubeconfig = f.Value.String()
	}
	if kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "cert-manager-cainjector: --kubeconfig is required")
		os.Exit(2)
	}
	ctrl.SetLogger(klog.Background())
	log := ctrl.Log.WithName("cainjector")

	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		log.Error(err, "loading the kubeconfig")
		os.Exit(1)
	}
	restConfig = util.RestConfigWithUserAgent(restConfig, "cainjector")

	scheme := runtime.NewScheme()
	utilruntime.Must(kscheme.AddToScheme(scheme))
	utilruntime.Must(cmapi.AddToScheme(scheme))
	utilruntime.Must(apiext.AddToScheme(scheme))
	utilruntime.Must(apireg.AddToScheme(scheme))

	cacheOpts := cache.Options{}
	if *namespace != "" {
		// Namespaced objects (Certificates, Secrets) only from there; the
		// injectables are cluster-scoped and watched regardless.
		cacheOpts.DefaultNamespaces = map[string]cache.Config{*namespace: {}}
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 scheme,
		LeaderElection:         false,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cacheOpts,
		// Secrets are watched as metadata only and read from the API
		// server when a CA is needed, so their data is never cached.
		Client: client.Options{
			Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}},
		},
		Controller: config.Controller{SkipNameValidation: ptr(true)},
	})
	if err != nil {
		log.Error(err, "creating the manager")
		os.Exit(1)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		Namespace:                    *namespace,
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.CustomResourceDefinitionName:       *crds,
			cainjector.APIServiceName:                     *apiservices,
		},
	})
	if err != nil {
		log.Error(err, "registering the injectors")
		os.Exit(1)
	}
	log.Info("cert-manager cainjector running", "namespace", *namespace)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}

func ptr[T any](v T) *T { return &v }
