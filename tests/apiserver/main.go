// Command apiserver runs an embedded etcd and a real kube-apiserver in one
// process, listening only on 127.0.0.1, for integration tests.
//
// Everything it writes goes below --data-dir:
//
//	pki/ca.crt, pki/ca.key           self-signed CA (signs serving + client certs)
//	pki/serving.crt, pki/serving.key serving cert for 127.0.0.1 / localhost
//	pki/admin.crt, pki/admin.key     client cert CN=admin, O=system:masters
//	pki/sa.key, pki/sa.pub           service-account token signing key
//	etcd/                            etcd data
//	kubeconfig                       admin kubeconfig
//	pid                              this process's pid
//	ready                            created once /readyz answers ok
//
// Arguments after "--" are passed on to kube-apiserver (and win over the
// defaults, e.g. "-- --token-auth-file=/path").
//
// With --controller-manager (this binary, as kube-controller-manager), it
// also runs the controllers of --controllers (default: the garbage
// collector, the namespace, deployment and replicaset controllers, and the
// volume binder and the claims' and volumes' protection) once the
// apiserver is ready, as a child process logging to controller-manager.log:
// ownerReferences cascade, namespace deletion completes, Deployments get
// ReplicaSets and Pods, claims are bound to the --volumes PersistentVolumes
// of no class it makes (volumes.go).
//
// With --nodes N, it makes N simulated Nodes and runs the kube-scheduler
// (scheduler.log) and kwok (kwok.log; kwok.go, kwok-stages.yaml) beside it:
// Pods are scheduled onto the Nodes, and kwok reports them running and
// ready, or crash-looping when annotated so, and removes them when deleted,
// as a kubelet would. "ready" is written once the Nodes and the volumes
// exist.
//
// It stops cleanly (apiserver drained, etcd closed, exit 0) on SIGTERM or
// SIGINT, and also when the process given by --watch-pid goes away.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	_ "time/tzdata" // for timeZone support in CronJob

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"

	// kubectl's client auth plugins, as its own binary imports them.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

func main() {
	// One binary for the test cluster, one link: the apiserver (by
	// default), and by their names as the first argument the
	// kube-controller-manager, kube-scheduler and kwok it runs beside it
	// and kubectl (the examples'), each as its own binary's main runs it.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "kube-controller-manager":
			os.Args = append(os.Args[:1], os.Args[2:]...)
			os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
		case "kube-scheduler":
			os.Args = append(os.Args[:1], os.Args[2:]...)
			os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
		case "kwok":
			os.Args = append(os.Args[:1], os.Args[2:]...)
			os.Exit(runKwok())
		case "kubectl":
			os.Args = append(os.Args[:1], os.Args[2:]...)
			logs.GlogSetter(kubectl.GetLogVerbosity(os.Args)) // nolint:errcheck
			if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
				kubectlutil.CheckErr(err)
			}
			os.Exit(0)
		}
	}
	dataDir := flag.String("data-dir", "", "directory for all state (required)")
	watchPid := flag.Int("watch-pid", 0, "exit cleanly when this process is gone (0: don't watch)")
	removeOnExit := flag.Bool("remove-data-dir", false, "delete --data-dir on clean exit (kept after a failure, for its log)")
	controllerManager := flag.Bool("controller-manager", false, "run the kube-controller-manager (this binary's) beside the apiserver")
	controllers := flag.String("controllers", "garbage-collector-controller,namespace-controller,deployment-controller,replicaset-controller,persistentvolume-binder-controller,persistentvolumeclaim-protection-controller,persistentvolume-protection-controller", "the controllers it runs")
	nodes := flag.Int("nodes", 0, "simulated Nodes to make, with the kube-scheduler and kwok (this binary's) beside the apiserver (0: none)")
	volumes := flag.Int("volumes", 0, "PersistentVolumes of no class to make, for the controller-manager's binder to bind claims to")
	flag.Parse()
	if *dataDir == "" {
		fatal(fmt.Errorf("--data-dir is required"))
	}
	code, err := run(*dataDir, *watchPid, *controllerManager, *controllers, *nodes, *volumes, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "apiserver:", err)
		if code == 0 {
			code = 1
		}
	}
	fmt.Fprintf(os.Stderr, "apiserver: exiting with code %d\n", code)
	if *removeOnExit && code == 0 {
		os.RemoveAll(*dataDir)
	}
	os.Exit(code)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "apiserver:", err)
	os.Exit(1)
}

func run(dir string, watchPid int, controllerManager bool, controllers string, nodes, volumes int, extraArgs []string) (int, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return 1, err
	}
	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return 1, err
	}
	os.Remove(filepath.Join(dir, "ready"))
	if err := os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return 1, err
	}
	if err := writePKI(pki); err != nil {
		return 1, err
	}

	ports, err := freePorts(3)
	if err != nil {
		return 1, err
	}
	etcdClient := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	etcdPeer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	apiPort := ports[2]
	server := fmt.Sprintf("https://127.0.0.1:%d", apiPort)

	etcdLevel := zap.NewAtomicLevelAt(zapcore.ErrorLevel)
	etcd, err := startEtcd(filepath.Join(dir, "etcd"), etcdClient, etcdPeer, etcdLevel)
	if err != nil {
		return 1, fmt.Errorf("etcd: %w", err)
	}
	defer func() {
		// etcd logs "server closed" errors while closing: not worth showing.
		etcdLevel.SetLevel(zapcore.FatalLevel)
		etcd.Close()
	}()

	if err := writeKubeconfig(filepath.Join(dir, "kubeconfig"), server, pki); err != nil {
		return 1, err
	}

	p := func(name string) string { return filepath.Join(pki, name) }
	args := []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--etcd-servers=" + etcdClient,
		"--tls-cert-file=" + p("serving.crt"),
		"--tls-private-key-file=" + p("serving.key"),
		"--client-ca-file=" + p("ca.crt"),
		"--service-account-issuer=https://127.0.0.1:" + strconv.Itoa(apiPort),
		"--service-account-key-file=" + p("sa.pub"),
		"--service-account-signing-key-file=" + p("sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--endpoint-reconciler-type=none",
		"--v=0",
	}
	args = append(args, extraArgs...)

	ready := make(chan struct{})
	go watchReady(server, pki, ready)
	if watchPid > 0 {
		go watchParent(watchPid)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	var children []child
	if controllerManager {
		children = append(children, child{"controller-manager.log", []string{"kube-controller-manager",
			"--kubeconfig=" + kubeconfig,
			"--controllers=" + controllers,
			"--leader-elect=false",
			// Its default client limit (20 requests/s) would make the
			// controllers, not the host, what a bench of 1,000 parents
			// measures.
			"--kube-api-qps=500",
			"--kube-api-burst=1000",
			"--secure-port=0",
			"--v=0",
		}})
	}
	if nodes > 0 {
		stages := filepath.Join(dir, "kwok-stages.yaml")
		if err := os.WriteFile(stages, kwokStages, 0o644); err != nil {
			return 1, err
		}
		children = append(children,
			child{"scheduler.log", []string{"kube-scheduler",
				"--kubeconfig=" + kubeconfig,
				"--leader-elect=false",
				"--kube-api-qps=500",
				"--kube-api-burst=1000",
				"--secure-port=0",
				"--v=0",
			}},
			child{"kwok.log", []string{"kwok",
				"--kubeconfig=" + kubeconfig,
				"--config=" + stages,
				"--manage-nodes-with-annotation-selector=" + kwokNode + "=fake",
				"--node-lease-duration-seconds=0",
			}},
		)
	}
	running, err := startChildren(dir, children, ready)
	if err != nil {
		return 1, err
	}
	go func() {
		<-ready
		if err := furnish(kubeconfig, nodes, volumes); err != nil {
			fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "ready"), []byte(server+"\n"), 0o644)
	}()

	cmd := app.NewAPIServerCommand() // installs the SIGTERM/SIGINT handler
	cmd.SetArgs(args)
	code := cli.Run(cmd)
	os.Remove(filepath.Join(dir, "ready"))
	for _, c := range running {
		if c.Process != nil {
			c.Process.Kill()
			c.Wait()
		}
	}
	return code, nil
}

// furnish makes the simulated Nodes and the volumes, before "ready".
func furnish(kubeconfig string, nodes, volumes int) error {
	if nodes == 0 && volumes == 0 {
		return nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// Not client-go's 5 requests/s: the volumes are 64 creations.
	cfg.QPS, cfg.Burst = 500, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := createNodes(ctx, client, nodes); err != nil {
		return fmt.Errorf("the simulated Nodes: %w", err)
	}
	if err := createVolumes(ctx, client, volumes); err != nil {
		return fmt.Errorf("the volumes: %w", err)
	}
	return nil
}

// child is a program this binary runs beside the apiserver: its
// arguments (the first names it, see main) and its log file in the data
// dir.
type child struct {
	log  string
	args []string
}

// startChildren starts each child once ready is closed, killed when this
// process dies however it ends, and first on SIGTERM or SIGINT, so that
// the apiserver's drain does not wait for their watches.
func startChildren(dir string, children []child, ready <-chan struct{}) ([]*exec.Cmd, error) {
	if len(children) == 0 {
		return nil, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var cmds []*exec.Cmd
	for _, c := range children {
		cmd := exec.Command(self, c.args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		logFile, err := os.Create(filepath.Join(dir, c.log))
		if err != nil {
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmds = append(cmds, cmd)
	}
	go func() {
		<-ready
		for _, cmd := range cmds {
			if err := cmd.Start(); err != nil {
				fmt.Fprintf(os.Stderr, "apiserver: starting %s: %v\n", cmd.Args[1], err)
			}
		}
	}()
	stopping := make(chan os.Signal, 1)
	signal.Notify(stopping, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stopping
		for _, cmd := range cmds {
			if cmd.Process != nil {
				cmd.Process.Kill()
			}
		}
	}()
	return cmds, nil
}

func startEtcd(dir, client, peer string, level zap.AtomicLevel) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.Name = "test"
	cu, _ := url.Parse(client)
	pu, _ := url.Parse(peer)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	zcfg := zap.NewProductionConfig()
	zcfg.Level = level
	zcfg.Sampling = nil
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(must(zcfg.Build()))
	cfg.UnsafeNoFsync = true // test data only: trade durability for speed
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("not ready after 60s")
	}
}

// watchReady polls /readyz as admin and closes ready once it answers ok.
func watchReady(server, pki string, ready chan<- struct{}) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"))
	if err != nil {
		fatal(err)
	}
	caPEM, _ := os.ReadFile(filepath.Join(pki, "ca.crt"))
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}},
	}}
	for {
		resp, err := c.Get(server + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				close(ready)
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// watchParent sends ourselves SIGTERM (the apiserver's own shutdown path)
// once process pid has exited or been replaced by another with the same pid.
func watchParent(pid int) {
	start := procStart(pid)
	for {
		time.Sleep(500 * time.Millisecond)
		if syscall.Kill(pid, 0) == syscall.ESRCH || procStart(pid) != start {
			fmt.Fprintf(os.Stderr, "apiserver: watched pid %d is gone, shutting down\n", pid)
			syscall.Kill(os.Getpid(), syscall.SIGTERM)
			return
		}
	}
}

// procStart returns the start time field of /proc/<pid>/stat ("" if gone).
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 {
		return ""
	}
	return fields[19] // field 22 of stat: starttime
}

func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// writePKI creates the CA, serving, admin and service-account keys, keeping
// an existing CA so certificates minted for an earlier run stay valid.
func writePKI(pki string) error {
	p := func(name string) string { return filepath.Join(pki, name) }
	ca, caKey, err := loadCA(p("ca.crt"), p("ca.key"))
	if err != nil {
		caKey = newKey()
		tmpl := &x509.Certificate{
			Subject:               pkix.Name{CommonName: "reconciler-test-ca"},
			IsCA:                  true,
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
			BasicConstraintsValid: true,
		}
		ca, err = sign(tmpl, caKey, nil, nil, p("ca.crt"), p("ca.key"))
		if err != nil {
			return err
		}
	}
	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if _, err := sign(serving, newKey(), ca, caKey, p("serving.crt"), p("serving.key")); err != nil {
		return err
	}
	admin := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if _, err := sign(admin, newKey(), ca, caKey, p("admin.crt"), p("admin.key")); err != nil {
		return err
	}
	saKey := newKey()
	if err := writePEM(p("sa.key"), "EC PRIVATE KEY", must(x509.MarshalECPrivateKey(saKey)), 0o600); err != nil {
		return err
	}
	return writePEM(p("sa.pub"), "PUBLIC KEY", must(x509.MarshalPKIXPublicKey(&saKey.PublicKey)), 0o644)
}

func newKey() *ecdsa.PrivateKey { return must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader)) }

// sign issues tmpl for key, signed by parent (self-signed if parent is nil),
// and writes certificate and key as PEM files.
func sign(tmpl *x509.Certificate, key *ecdsa.PrivateKey, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, certPath, keyPath string) (*x509.Certificate, error) {
	tmpl.SerialNumber = must(rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62)))
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(10 * 365 * 24 * time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, err
	}
	if err := writePEM(certPath, "CERTIFICATE", der, 0o644); err != nil {
		return nil, err
	}
	if err := writePEM(keyPath, "EC PRIVATE KEY", must(x509.MarshalECPrivateKey(key)), 0o600); err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}

func loadCA(certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, nil, err
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("CA key is not ECDSA")
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	return cert, key, err
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}

func writeKubeconfig(path, server, pki string) error {
	data := func(name string) string {
		return base64.StdEncoding.EncodeToString(must(os.ReadFile(filepath.Join(pki, name))))
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: test
  context: {cluster: test, user: admin}
current-context: test
`, server, data("ca.crt"), data("admin.crt"), data("admin.key"))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(cfg), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func must[T any](v T, err error) T {
	if err != nil {
		fatal(err)
	}
	return v
}
