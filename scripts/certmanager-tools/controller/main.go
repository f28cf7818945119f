// Command cert-manager-controller runs cert-manager's own control loops
// (github.com/cert-manager/cert-manager/pkg/controller/...) for the issuer
// kinds hangar-sidecar's chart uses: SelfSigned and CA Issuers and
// ClusterIssuers, Certificates, CertificateRequests and their approver.
//
// Upstream's main package lives in a nested Go module (cmd/controller) that
// the Go module proxy does not serve, so scripts/certmanager-tools.sh builds
// this small entry point instead. Everything that decides what a
// Certificate gets (the trigger, key manager, request manager, issuing,
// readiness and revision controllers, the issuers' signers) is upstream
// code at the pinned version; this file only parses flags, builds the
// controller context and starts the loops and informers, as upstream's
// cmd/controller/app does. No leader election, no metrics or health
// servers: it is for tests against a local API server.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

// The loops upstream enables by default, minus ACME, Vault, Venafi, the
// ingress/gateway shims and CertificateSigningRequests.
var defaultControllers = []string{
	issuers.ControllerName,
	clusterissuers.ControllerName,
	trigger.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	issuing.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
	approver.ControllerName,
	crca.CRControllerName,
	crselfsigned.CRControllerName,
}

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server (required)")
	namespace := flag.String("namespace", "", "only watch this namespace (default: all)")
	clusterNS := flag.String("cluster-resource-namespace", "cert-manager",
		"namespace of the Secrets ClusterIssuers refer to")
	enabled := flag.String("controllers", strings.Join(defaultControllers, ","),
		"comma-separated control loops to run")
	workers := flag.Int("workers", 5, "workers per control loop")
	flag.Parse()
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "cert-manager-controller: --kubeconfig is required")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, klog.Background(), "controller")
	log := logf.FromContext(ctx)

	// The values upstream's controller configuration defaults to.
	opts := controller.ContextOptions{
		Kubeconfig:         *kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		Namespace:          *namespace,
		IssuerOptions: controller.IssuerOptions{
			ClusterResourceNamespace: *clusterNS,
		},
		CertificateOptions: controller.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
		SchedulerOptions: controller.SchedulerOptions{MaxConcurrentChallenges: 60},
	}
	factory, err := controller.NewContextFactory(ctx, opts)
	if err != nil {
		log.Error(err, "building the controller context")
		os.Exit(1)
	}

	known := controller.Known()
	var names []string
	for _, n := range strings.Split(*enabled, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if _, ok := known[n]; !ok {
			var all []string
			for k := range known {
				all = append(all, k)
			}
			sort.Strings(all)
			fmt.Fprintf(os.Stderr, "cert-manager-controller: unknown controller %q (built in: %s)\n",
				n, strings.Join(all, ", "))
			os.Exit(2)
		}
		if n == clusterissuers.ControllerName && *namespace != "" {
			continue // as upstream: no ClusterIssuers when scoped to a namespace
		}
		names = append(names, n)
	}

	var wg sync.WaitGroup
	for _, n := range names {
		iface, err := known[n](factory)
		if err != nil {
			log.Error(err, "constructing controller", "controller", n)
			os.Exit(1)
		}
		wg.Add(1)
		go func(n string, c controller.Interface) {
			defer wg.Done()
			log.Info("starting controller", "controller", n)
			if err := c.Run(*workers, ctx); err != nil {
				log.Error(err, "controller failed", "controller", n)
				os.Exit(1)
			}
		}(n, iface)
	}

	// All Contexts built from one factory share its informer factories.
	shared, err := factory.Build()
	if err != nil {
		log.Error(err, "building the informer context")
		os.Exit(1)
	}
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	log.Info("cert-manager controller running", "controllers", names)
	wg.Wait()
	logf.FlushLogs()
}
