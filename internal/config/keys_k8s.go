package config

import (
	"regexp"
	"time"
)

// Keys of the Kubernetes cluster manager: Spark's spark.kubernetes.* names
// and defaults (Spark 4.2) for what drover implements, and drover's own
// drover.kubernetes.* keys. The pod-shaping keys are resolved and checked
// together by internal/k8s/podspec (NewExecutorConf), which reports a
// missing image, a bad volume or secret reference, or an unusable pod
// template before anything is created.

// Where and as whom: namespace, API server, images.
var (
	KubernetesNamespace = String("spark.kubernetes.namespace", "default",
		"Namespace of the driver and executor pods and of everything else the application creates.",
		Check("that is a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters)", isDNSLabel))

	KubernetesContext = String("spark.kubernetes.context", "",
		"Context of the kubeconfig file (`$KUBECONFIG`, else `~/.kube/config`) used to reach the cluster when "+
			"submitting or running a client-mode driver. Unset means the file's current context.",
		Optional())

	KubernetesDriverMaster = String("spark.kubernetes.driver.master", "https://kubernetes.default.svc",
		"API server URL a cluster-mode driver uses to manage its executor pods. When the API servers are listed "+
			"(`spark.kubernetes.apiserver.host`, or a list in the master URL), the driver gets the list after this URL.")

	KubernetesAPIServerHost = String("spark.kubernetes.apiserver.host", "",
		"The cluster's API servers: one URL, or a comma-separated list of the instances of one control plane "+
			"over one etcd, `https://k8s-api-1:6443,https://k8s-api-2:6443` (from drover's design documents; "+
			"not a Spark key). Every client drover makes, the CLI's and the driver's, sends to the first healthy "+
			"one and moves to the next within a second when it fails (refused, reset, timeout, 5xx), probing a "+
			"failed one in the background and taking it back when ready. Every instance must accept the same CA "+
			"and credentials. The master URL may carry the list instead (`k8s://https://a:6443,https://b:6443`); "+
			"when both are set they must name the same servers in the same order.",
		Optional())

	KubernetesContainerImage = String("spark.kubernetes.container.image", "",
		"Container image of the driver and executor pods: the application binary on a minimal non-root base. "+
			"Required unless the role's own key or the pod template's container names an image.",
		Optional())

	KubernetesDriverContainerImage = String("spark.kubernetes.driver.container.image", "",
		"Container image of the driver pod in cluster mode.",
		FallbackTo(KubernetesContainerImage))

	KubernetesExecutorContainerImage = String("spark.kubernetes.executor.container.image", "",
		"Container image of the executor pods.",
		FallbackTo(KubernetesContainerImage))

	KubernetesExecutorBinary = String("drover.kubernetes.executor.binary", "",
		"Absolute path of the application binary in the executor image: the executor container's command. "+
			"Unset, the driver's own path, which is right in cluster mode (the driver runs the same image) and in "+
			"client mode when the image holds the binary where the submitting machine does.",
		Optional())

	KubernetesContainerImagePullPolicy = Enum("spark.kubernetes.container.image.pullPolicy", "IfNotPresent",
		[]string{"Always", "Never", "IfNotPresent"},
		"Image pull policy of the driver and executor containers. When unset, a pod template's policy is kept.")

	KubernetesContainerImagePullSecrets = String("spark.kubernetes.container.image.pullSecrets", "",
		"Comma-separated names of the Secrets used to pull images from private registries (the pods' "+
			"imagePullSecrets, added to a pod template's).",
		Optional())
)

// API credentials. Spark builds these from prefixes; drover registers each
// key so that typos are caught and the token is redacted.
var (
	// KubernetesAuth are the credentials of a client-mode driver.
	KubernetesAuth = authKeys("spark.kubernetes.authenticate.",
		"a client-mode driver uses to manage its executor pods")
	// KubernetesSubmissionAuth are the credentials of drover submit.
	KubernetesSubmissionAuth = authKeys("spark.kubernetes.authenticate.submission.",
		"`drover submit` uses to create the driver pod")
	// KubernetesDriverAuth are the credentials given to a cluster-mode
	// driver instead of its service account.
	KubernetesDriverAuth = authKeys("spark.kubernetes.authenticate.driver.",
		"a cluster-mode driver uses to manage its executor pods, instead of its service account")

	KubernetesDriverServiceAccountName = String("spark.kubernetes.authenticate.driver.serviceAccountName", "",
		"Service account of the driver pod in cluster mode; it needs the rights to create, watch, list and "+
			"delete pods, config maps and services in the namespace. Unset means the "+
			"namespace's `default` service account.",
		Optional())

	KubernetesExecutorServiceAccountName = String("spark.kubernetes.authenticate.executor.serviceAccountName", "",
		"Service account of the executor pods, unless the pod template names one. Executors never call the "+
			"Kubernetes API, so an account without rights is enough; as in Spark, unset means the driver's "+
			"(spark.kubernetes.authenticate.driver.serviceAccountName), then the namespace's `default`.",
		FallbackTo(KubernetesDriverServiceAccountName))
)

// AuthKeys are the API credential keys under one Spark prefix.
type AuthKeys struct {
	OAuthToken, OAuthTokenFile, ClientKeyFile, ClientCertFile, CACertFile *Entry[string]
}

func authKeys(prefix, who string) AuthKeys {
	return AuthKeys{
		OAuthToken: String(prefix+"oauthToken", "",
			"OAuth bearer token "+who+". Prefer "+prefix+"oauthTokenFile, which keeps the token off command lines.",
			Optional(), Secret()),
		OAuthTokenFile: String(prefix+"oauthTokenFile", "",
			"File holding the OAuth bearer token "+who+".",
			Optional()),
		ClientKeyFile: String(prefix+"clientKeyFile", "",
			"Client private key file (TLS client authentication) "+who+".",
			Optional()),
		ClientCertFile: String(prefix+"clientCertFile", "",
			"Client certificate file (TLS client authentication) "+who+".",
			Optional()),
		CACertFile: String(prefix+"caCertFile", "",
			"CA certificate file to verify the API server's certificate, for the connection "+who+".",
			Optional()),
	}
}

// The driver pod (cluster mode).
var (
	KubernetesDriverPodName = String("spark.kubernetes.driver.pod.name", "",
		"Name of the driver pod. Set by `drover submit` inside the driver pod (cluster mode), where executor "+
			"pods get an ownerReference to it; in client mode, set it when the driver itself runs in a pod, so "+
			"that executor pods are deleted with that pod.",
		Optional())

	KubernetesDriverRestartPolicy = Enum("spark.kubernetes.driver.restartPolicy", "Never", []string{"Never", "OnFailure"},
		"restartPolicy of the driver pod (cluster mode). `OnFailure` restarts a driver whose process failed in the "+
			"same pod: it keeps the application's id, Secret and Service, adopts the executors that are alive, "+
			"skips the shuffle stages whose outputs they still hold and the outputs already committed, and runs "+
			"`main` again. See drover.kubernetes.driver.maxRestarts.")

	KubernetesDriverMaxRestarts = Int("drover.kubernetes.driver.maxRestarts", 3,
		"Restarts allowed to a driver with spark.kubernetes.driver.restartPolicy=OnFailure. The attempt after the "+
			"last allowed restart does not run: the application ends as failed with the last attempt's cause.",
		AtLeast(0))

	KubernetesDriverRequestCores = String("spark.kubernetes.driver.request.cores", "",
		"CPU request of the driver pod as a Kubernetes quantity (`0.5`, `500m`, `2`). Unset means spark.driver.cores.",
		Optional(), Check(cpuQuantityDesc, isCPUQuantity))

	KubernetesDriverLimitCores = String("spark.kubernetes.driver.limit.cores", "",
		"CPU limit of the driver pod as a Kubernetes quantity. Unset means no CPU limit.",
		Optional(), Check(cpuQuantityDesc, isCPUQuantity))

	KubernetesDriverPodTemplateFile = String("spark.kubernetes.driver.podTemplateFile", "",
		"Local YAML file with a Pod that the driver pod is built on.",
		Optional())

	KubernetesDriverPodTemplateContainerName = String("spark.kubernetes.driver.podTemplateContainerName", "",
		"Container of spark.kubernetes.driver.podTemplateFile that runs the driver. Unset means the template's "+
			"first container.",
		Optional())

	KubernetesDriverLabels = Prefix("spark.kubernetes.driver.label.", "NAME",
		"Label added to the driver pod. The labels spark-app-selector, spark-role and spark-exec-id are reserved.")

	KubernetesDriverAnnotations = Prefix("spark.kubernetes.driver.annotation.", "NAME",
		"Annotation added to the driver pod.")

	KubernetesDriverNodeSelector = Prefix("spark.kubernetes.driver.node.selector.", "LABEL",
		"Node selector of the driver pod, added to spark.kubernetes.node.selector.* (this wins for the same label).")

	KubernetesDriverSchedulerName = String("spark.kubernetes.driver.scheduler.name", "",
		"Scheduler of the driver pod.",
		FallbackTo(KubernetesSchedulerName))

	KubernetesDriverEnv = Prefix("spark.kubernetes.driverEnv.", "NAME",
		"Environment variable NAME of the driver container in cluster mode.")

	KubernetesDriverSecrets = Prefix("spark.kubernetes.driver.secrets.", "SECRET",
		"Mount the Secret SECRET of the application's namespace into the driver container (cluster mode), at "+
			"the absolute path given as the value.")

	KubernetesDriverSecretKeyRefs = Prefix("spark.kubernetes.driver.secretKeyRef.", "ENV",
		"Environment variable ENV of the driver container (cluster mode), taken from a Secret: the value is "+
			"`<secret>:<key>`.")

	KubernetesDriverVolumes = Prefix("spark.kubernetes.driver.volumes.", "TYPE.NAME.PROPERTY",
		"Volume NAME of type TYPE mounted in the driver container (cluster mode), with the properties of "+
			"spark.kubernetes.executor.volumes.* except on-demand claims.")

	KubernetesDriverServiceLabels = Prefix("spark.kubernetes.driver.service.label.", "NAME",
		"Label added to the driver's headless service (cluster mode).")

	KubernetesDriverServiceAnnotations = Prefix("spark.kubernetes.driver.service.annotation.", "NAME",
		"Annotation added to the driver's headless service (cluster mode).")
)

// Scheduling of both kinds of pods.
var (
	KubernetesSchedulerName = String("spark.kubernetes.scheduler.name", "",
		"Scheduler of the driver and executor pods (such as `volcano` or `yunikorn`), unless a role's own key "+
			"is set. Unset means the cluster's default scheduler, or the pod template's.",
		Optional())

	KubernetesNodeSelector = Prefix("spark.kubernetes.node.selector.", "LABEL",
		"Node selector of the driver and executor pods: they only run on nodes with this label value.")

	KubernetesVolcanoPodGroupTemplateFile = String("spark.kubernetes.scheduler.volcano.podGroupTemplateFile", "",
		"Local YAML file with a Volcano PodGroup (scheduling.volcano.sh/v1beta1) that the application's PodGroup "+
			"`<app id>-podgroup` is built on, with spark.kubernetes.scheduler.name=volcano: its minMember, "+
			"minResources, queue and priorityClassName are kept. Unset means an empty spec (minMember 1). "+
			"See docs/queues.md.",
		Optional())
)

// Queues and gangs: Kueue, Volcano and YuniKorn (docs/queues.md).
var (
	KubernetesQueue = String("drover.kubernetes.queue", "",
		"Queue the application's pods wait in until the cluster admits them. Which queue system depends on "+
			"spark.kubernetes.scheduler.name: `volcano` puts it in the PodGroup's spec.queue, `yunikorn` in "+
			"the pods' `queue` label; otherwise it is a Kueue LocalQueue of the namespace, named by the label "+
			"kueue.x-k8s.io/queue-name on the executor pods and on a cluster-mode driver pod. Spark's way, "+
			"spark.kubernetes.{driver,executor}.label.kueue.x-k8s.io/queue-name, works too. Unset means no queue.",
		Optional(), Check("that is a label value (at most 63 letters, digits, '-', '_' or '.', starting and "+
			"ending with a letter or digit)", isLabelValue))

	KubernetesQueueTimeout = Duration("drover.kubernetes.queue.timeout", "0s", time.Second,
		"With a Kueue queue: the application fails when its executor pods have waited this long for admission "+
			"and none runs, naming the queue. 0 waits as long as the queue holds them (a busy queue may rightly "+
			"hold an application for hours); a LocalQueue that does not exist fails the application at once when "+
			"the driver may read it (`drover rbac` grants that).",
		AtLeast(time.Duration(0)))

	KubernetesQueueGang = Bool("drover.kubernetes.queue.gang", true,
		"With a queue and static allocation (spark.dynamicAllocation.enabled=false), the executor pods form one "+
			"group the queue admits all at once or not at all: a Kueue pod group of spark.executor.instances "+
			"pods, a YuniKorn task group. False admits each pod on its own. Dynamic allocation always does.")
)

// Executor pods.
var (
	KubernetesExecutorPodNamePrefix = String("spark.kubernetes.executor.podNamePrefix", "",
		"Prefix of the executor pod names, which are `<prefix>-exec-<id>`: a DNS subdomain name of at most "+
			"237 characters. Unset means the application name made DNS-safe, followed by a part of the "+
			"application id so that two runs of an application never collide, kept short enough for the pod "+
			"name to be a valid host name (63 characters).",
		Optional(), Check("that is a DNS-1123 subdomain of at most 237 characters", isPodNamePrefix))

	KubernetesExecutorRequestCores = String("spark.kubernetes.executor.request.cores", "",
		"CPU request of each executor pod as a Kubernetes quantity (`0.5`, `500m`, `2`), for executors that may "+
			"use less CPU than spark.executor.cores tasks suggest. Unset means spark.executor.cores.",
		Optional(), Check(cpuQuantityDesc, isCPUQuantity))

	KubernetesExecutorLimitCores = String("spark.kubernetes.executor.limit.cores", "",
		"CPU limit of each executor pod as a Kubernetes quantity; must not be below the CPU request. "+
			"Unset means no CPU limit (a pod template's limit is kept).",
		Optional(), Check(cpuQuantityDesc, isCPUQuantity))

	KubernetesExecutorLabels = Prefix("spark.kubernetes.executor.label.", "NAME",
		"Label added to every executor pod; `{{APP_ID}}` and `{{EXECUTOR_ID}}` in the value are replaced. "+
			"The labels spark-app-selector, spark-role, spark-exec-id and spark-exec-inactive are reserved.")

	KubernetesExecutorAnnotations = Prefix("spark.kubernetes.executor.annotation.", "NAME",
		"Annotation added to every executor pod; `{{APP_ID}}` and `{{EXECUTOR_ID}}` in the value are replaced.")

	KubernetesExecutorNodeSelector = Prefix("spark.kubernetes.executor.node.selector.", "LABEL",
		"Node selector of the executor pods, added to spark.kubernetes.node.selector.* (this wins for the same label).")

	KubernetesExecutorSchedulerName = String("spark.kubernetes.executor.scheduler.name", "",
		"Scheduler of the executor pods.",
		FallbackTo(KubernetesSchedulerName))

	ExecutorEnv = Prefix("spark.executorEnv.", "NAME",
		"Environment variable NAME of every executor process (Spark's family). On Kubernetes it is added to "+
			"the executor container after a pod template's variables.")

	KubernetesExecutorSecrets = Prefix("spark.kubernetes.executor.secrets.", "SECRET",
		"Mount the Secret SECRET of the application's namespace into every executor container, at the "+
			"absolute path given as the value.")

	KubernetesExecutorSecretKeyRefs = Prefix("spark.kubernetes.executor.secretKeyRef.", "ENV",
		"Environment variable ENV of every executor container, taken from a Secret: the value is "+
			"`<secret>:<key>`.")

	KubernetesExecutorVolumes = Prefix("spark.kubernetes.executor.volumes.", "TYPE.NAME.PROPERTY",
		"Volume NAME of type TYPE (`hostPath`, `emptyDir`, `persistentVolumeClaim` or `nfs`) mounted in every "+
			"executor container. Properties: `mount.path` (required), `mount.subPath`, `mount.subPathExpr`, "+
			"`mount.readOnly`; `options.path` and `options.type` (hostPath); `options.medium` and "+
			"`options.sizeLimit` (emptyDir); `options.claimName` (required; `OnDemand` creates a claim per "+
			"executor, and `SPARK_EXECUTOR_ID` in a name is replaced by the executor id), `options.storageClass` "+
			"and `options.sizeLimit` (required with `OnDemand`), `label.*` and `annotation.*` of an on-demand "+
			"claim (persistentVolumeClaim); `options.server` and `options.path` (nfs). Volumes named "+
			"`spark-local-dir-*` become the executors' local directories.")

	KubernetesExecutorPodTemplateFile = String("spark.kubernetes.executor.podTemplateFile", "",
		"Local YAML file with a Pod that every executor pod is built on: drover's settings are added to it "+
			"(see internal/k8s/podspec for which side wins). Read and checked before any pod is created.",
		Optional())

	KubernetesExecutorPodTemplateContainerName = String("spark.kubernetes.executor.podTemplateContainerName", "",
		"Container of spark.kubernetes.executor.podTemplateFile that runs the executor; it must exist. Unset "+
			"means the template's first container.",
		Optional())

	KubernetesExecutorDeleteOnTermination = Bool("spark.kubernetes.executor.deleteOnTermination", true,
		"Delete the pods of executors that ended. False keeps them, labelled spark-exec-inactive=true, for "+
			"inspection (they are still deleted with the driver pod); pods that could not start are deleted either way.")

	KubernetesExecutorTerminationGracePeriod = Duration("spark.kubernetes.executor.terminationGracePeriodSeconds", "30s",
		time.Second,
		"terminationGracePeriodSeconds of the executor pods: how long an executor has to exit after SIGTERM. "+
			"When unset, a pod template's value is kept.",
		Check("of whole seconds ≥ 0", func(d time.Duration) bool { return d >= 0 && d%time.Second == 0 }))

	KubernetesExecutorDisableConfigMap = Bool("spark.kubernetes.executor.disableConfigMap", false,
		"Do not create the executor ConfigMap (the configuration executors read before they reach the driver) "+
			"nor mount it; executors then start with defaults and the pod's environment until they register.")

	KubernetesAllowHostVolumes = Bool("drover.kubernetes.volumes.allowHostVolumes", false,
		"Allow hostPath and nfs volumes (spark.kubernetes.{driver,executor}.volumes.hostPath|nfs.*). They give pods the "+
			"node's files or a network share outside Kubernetes' access control, and break the restricted Pod Security "+
			"profile, so they are refused unless this is true; submit --verbose then names them.")

	KubernetesExecutorCheckPeerAddress = Bool("drover.kubernetes.executor.checkPeerAddress", true,
		"Admit an executor's registration only when its control connection comes from its pod's IP and the "+
			"address it registers for the driver's result fetches is at that IP. false keeps the check of the pod's "+
			"name but compares no address (the driver warns): for a service-mesh sidecar that proxies the "+
			"executors' connections, or a client-mode driver outside the pod network behind source NAT. Any "+
			"holder of the executors' credentials can then register as a pending executor, take its tasks, "+
			"and point the driver's result fetches at any address.")

	KubernetesLocalDirsTmpfs = Bool("spark.kubernetes.local.dirs.tmpfs", false,
		"Back the executors' local directories (emptyDir volumes) with memory (tmpfs). Faster, but what they "+
			"hold counts against the pod's memory limit: raise spark.executor.memoryOverhead accordingly.")

	KubernetesExecutorCheckAllContainers = Bool("spark.kubernetes.executor.checkAllContainers", true,
		"Treat an executor pod as failed when any of its containers (sidecars included) exits with a non-zero "+
			"code; false looks only at the executor container.")
)

// Allocation of executor pods.
var (
	KubernetesAllocationBatchSize = Int("spark.kubernetes.allocation.batch.size", 20,
		"Executor pods created per round: exactly so with drover.kubernetes.allocation.policy=spark; the "+
			"first round and the least pending allowance of the adaptive policy.",
		AtLeast(1))

	KubernetesAllocationBatchDelay = Duration("spark.kubernetes.allocation.batch.delay", "1s", time.Millisecond,
		"Least time between two allocation rounds.",
		Check("> 100ms", func(d time.Duration) bool { return d > 100*time.Millisecond }))

	KubernetesAllocationMaxPendingPods = Int("spark.kubernetes.allocation.maxPendingPods", 1<<31-1,
		"Most executor pods that may be pending (created, not yet running) at once. Unset means no limit with "+
			"the spark policy, and max(drover.kubernetes.client.burst, running executors) with the adaptive "+
			"policy, max(spark.kubernetes.allocation.batch.size, running executors) once the cluster has left a "+
			"pod unschedulable or refused a create.",
		Infinity(), AtLeast(1),
		DefaultDoc("`infinity` (adaptive policy: max(client.burst, running executors), then max(batch.size, running executors))"))

	KubernetesAllocationMaximum = Int("spark.kubernetes.allocation.maximum", 1<<31-1,
		"Most executor ids the application issues over its life (every pod created counts, failed ones too).",
		Infinity(), AtLeast(1))

	KubernetesAllocationExecutorTimeout = Duration("spark.kubernetes.allocation.executor.timeout", "600s",
		time.Millisecond,
		"A created executor pod that the driver has not seen for this long (at least 5 × "+
			"spark.kubernetes.allocation.batch.delay) is deleted and counted as not created.",
		Check("> 0", func(d time.Duration) bool { return d > 0 }))

	KubernetesAllocationDriverReadinessTimeout = Duration("spark.kubernetes.allocation.driver.readinessTimeout", "1s",
		time.Second,
		"Longest wait for the driver pod to be Ready before the first executor pods are created (cluster mode); "+
			"pods are created anyway afterwards.",
		Check("> 0", func(d time.Duration) bool { return d > 0 }))

	KubernetesDynamicAllocationDeleteGracePeriod = Duration("spark.kubernetes.dynamicAllocation.deleteGracePeriod", "5s",
		time.Millisecond,
		"How long an executor removed by dynamic allocation may keep running before its pod is force-deleted.")
)

// Watching executor pods.
var (
	KubernetesExecutorAPIPollingInterval = Duration("spark.kubernetes.executor.apiPollingInterval", "30s",
		time.Millisecond,
		"Interval of the full list of executor pods when drover.kubernetes.executor.poll.enabled is true; "+
			"otherwise unused, since the informer's watch and re-lists keep the state.",
		Check("> 0", func(d time.Duration) bool { return d > 0 }))

	KubernetesExecutorEventProcessingInterval = Duration("spark.kubernetes.executor.eventProcessingInterval", "1s",
		time.Millisecond,
		"Least time between two passes of the lifecycle manager over executor pod changes.",
		Check("> 0", func(d time.Duration) bool { return d > 0 }))

	KubernetesExecutorMissingPodDetectDelta = Duration("spark.kubernetes.executor.missingPodDetectDelta", "30s",
		time.Millisecond,
		"A registered executor whose pod a full list does not contain is removed once it registered longer "+
			"ago than this.",
		Check("> 0", func(d time.Duration) bool { return d > 0 }))

	KubernetesExecutorDeletedExecutorsCacheTimeout = Duration("spark.kubernetes.executor.deletedExecutorsCacheTimeout",
		"180s", time.Second,
		"How long a removed executor is remembered after its pod was last seen, so that it is removed only once.",
		AtLeast(time.Duration(0)))
)

// Submission (drover submit, status and kill).
var (
	KubernetesSubmissionWaitAppCompletion = Bool("spark.kubernetes.submission.waitAppCompletion", true,
		"In cluster mode, `drover submit` waits for the application to end and exits with its status; false "+
			"returns once the driver pod is created.")

	KubernetesReportInterval = Duration("spark.kubernetes.report.interval", "1s", time.Millisecond,
		"Interval between status reports of `drover submit` while it waits for a cluster-mode application.",
		Check("> 0", func(d time.Duration) bool { return d > 0 }))

	KubernetesAppKillPodDeletionGracePeriod = Duration("spark.kubernetes.appKillPodDeletionGracePeriod", "",
		time.Second,
		"Grace period of the driver pod's deletion by `drover kill`. Unset means the pod's own "+
			"terminationGracePeriodSeconds.",
		Optional(), AtLeast(time.Duration(0)))
)

// Executor failures (core Spark keys that the Kubernetes lifecycle manager
// applies).
var (
	ExecutorMaxNumFailures = Int("spark.executor.maxNumFailures", 0,
		"Executor failures (pods that failed or could not start) after which the application fails. Unset means "+
			"max(3, 2 × the largest executor target: spark.executor.instances, or "+
			"spark.dynamicAllocation.maxExecutors with dynamic allocation).",
		Optional(), AtLeast(1))

	ExecutorFailuresValidityInterval = Duration("spark.executor.failuresValidityInterval", "", time.Millisecond,
		"How long an executor failure counts towards spark.executor.maxNumFailures. Unset means for the "+
			"application's whole life.",
		Optional(), Check("> 0", func(d time.Duration) bool { return d > 0 }))
)

// Drover's own Kubernetes keys.
var (
	KubernetesAllocationPolicy = Enum("drover.kubernetes.allocation.policy", "adaptive", []string{"adaptive", "spark"},
		"How executor pods are created. `adaptive` reaches the target as fast as the cluster admits pods: "+
			"concurrent creates, a first round of up to drover.kubernetes.client.burst pods, then rounds that "+
			"double while pods get scheduled, a pending allowance that grows with the running executors, and "+
			"back-off on unschedulable pods and failed creates (after which rounds start from "+
			"spark.kubernetes.allocation.batch.size). `spark` "+
			"reproduces Spark's allocator (spark.kubernetes.allocation.batch.size pods per round, created one "+
			"by one, no new round while a pod of the last one is unseen), for compatibility and comparisons.")

	KubernetesAllocationCreateConcurrency = Int("drover.kubernetes.allocation.createConcurrency", 16,
		"Most executor pod creations in flight at once with the adaptive policy (the spark policy creates one "+
			"at a time). The client's QPS and burst limits still apply.",
		AtLeast(1))

	KubernetesClientQPS = Float("drover.kubernetes.client.qps", 50,
		"Steady rate of requests (per second) of the driver's and drover submit's Kubernetes client. The "+
			"default matches a default kube-scheduler's client (about 50 binds per second), so the driver "+
			"creates executor pods as fast as a default cluster can place them and no faster; client-go's own "+
			"default, 5, is far too low for hundreds of executors. Lower it on a crowded shared API server.",
		Check("> 0", func(f float64) bool { return f > 0 }))

	KubernetesClientBurst = Int("drover.kubernetes.client.burst", 100,
		"Most requests the Kubernetes client sends at once after a quiet spell, before "+
			"drover.kubernetes.client.qps paces it. The adaptive allocation policy's first round creates up to "+
			"this many executor pods at once, so an application of that many executors gets them in one round.",
		AtLeast(1))

	KubernetesExecutorStartTimeout = Duration("drover.kubernetes.executor.startTimeout", "300s", time.Second,
		"The application fails when, for this long, no executor is running and executor pods keep failing to "+
			"start (image pull errors, invalid container configuration, pods rejected by the API server); the "+
			"error names the last cause. Pods that merely wait for room in the cluster (unschedulable) do not "+
			"count. 0 disables the check (spark.executor.maxNumFailures still applies).",
		AtLeast(time.Duration(0)))

	KubernetesExecutorPollEnabled = Bool("drover.kubernetes.executor.poll.enabled", false,
		"Also list the executor pods every spark.kubernetes.executor.apiPollingInterval, as Spark does. Off "+
			"by default: the informer's watch, and its re-list whenever the watch expires, already keep the "+
			"state, and each full list costs the API server as much as all of an application's watch events; "+
			"turn it on only as a safety net against a misbehaving watch.")
)

// Checks of the Kubernetes keys. The config package does not import
// k8s.io packages; internal/k8s/podspec checks the rest with the API's own
// validation.

const cpuQuantityDesc = "that is a CPU quantity > 0, such as 0.5, 500m or 2"

var (
	dnsLabelRE     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	labelValueRE   = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	cpuQuantityRE  = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)m?$`)
	nonZeroDigitRE = regexp.MustCompile(`[1-9]`)
)

func isDNSLabel(s string) bool { return len(s) <= 63 && dnsLabelRE.MatchString(s) }

func isLabelValue(s string) bool { return len(s) <= 63 && labelValueRE.MatchString(s) }

// isPodNamePrefix is Spark's check: with "-exec-" and an id of up to 10
// digits, the pod name stays a DNS subdomain name (≤ 253 characters).
func isPodNamePrefix(s string) bool { return len(s) <= 237 && dnsSubdomainRE.MatchString(s) }

func isCPUQuantity(s string) bool {
	return cpuQuantityRE.MatchString(s) && nonZeroDigitRE.MatchString(s)
}
