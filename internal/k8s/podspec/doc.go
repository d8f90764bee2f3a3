// Package podspec builds executor and driver pods, and the objects created with them,
// from ordered feature steps, as Spark's KubernetesExecutorBuilder does.
//
// It builds API objects from typed structs only ([ExecutorConf],
// [DriverConf], [Queue], [VolcanoGroup]) and reads no configuration and no
// file: internal/k8s/k8sconf resolves the application's configuration
// into them, once (k8sconf.ExecutorConf, k8sconf.DriverConf,
// k8sconf.Queue, k8sconf.VolcanoPodGroup), and reports every problem (no
// image, a malformed volume or secret reference, an unreadable or invalid
// pod template, a CPU request above its limit, …) with the key at fault,
// before any pod exists. The few keys the objects built here still name
// are [KeyNamespace], [KeyExecutorAnnotations] and [KeyDriverAnnotations]
// (checked against internal/config by k8sconf's tests).
//
// [BuildExecutorPod] starts each pod from a deep copy of the
// pod template, or an empty pod, and applies [ExecutorSteps] in order:
//
//  1. basic: name <prefix>-exec-<id>, the labels spark-app-selector,
//     spark-role=executor, spark-exec-id and spark-app-name, user labels and
//     annotations, image and pull policy, pull secrets, CPU and memory
//     (request = limit = spark.executor.memory + overhead), the executor
//     environment (DROVER_*, then spark.executorEnv.*: a value that
//     spark.redaction.regex marks by key or value is no literal but a
//     secretKeyRef to the application's Secret, which
//     [ExecutorAuthSecret] fills), the command, an ownerReference to the driver
//     pod, restartPolicy Never, node selector, scheduler name,
//     terminationGracePeriodSeconds and a restricted securityContext;
//  2. credentials: the service account;
//  3. mount-secrets: spark.kubernetes.executor.secrets.*;
//  4. env-secrets: spark.kubernetes.executor.secretKeyRef.*;
//  5. mount-volumes: spark.kubernetes.executor.volumes.* (hostPath,
//     emptyDir, persistentVolumeClaim including OnDemand claims, nfs);
//  6. local-dirs: emptyDir scratch space (tmpfs on request), unless user
//     volumes named spark-local-dir-* provide it;
//  7. config-map: the executor ConfigMap mounted at ConfDir;
//  8. queue: the pod's queue (docs/queues.md), following
//     spark.kubernetes.scheduler.name: Kueue's queue label (and, for a
//     gang, its pod group; the driver then owns the pod without being its
//     controller), Volcano's PodGroup annotation, or YuniKorn's app id,
//     queue and task group.
//
// [OnDemandClaims], [ExecutorConfigMap] and [ExecutorAuthSecret] build the
// other objects: the PersistentVolumeClaims of one executor pod, and the
// application's executor ConfigMap and Secret (credentials and sensitive
// variables);
// [VolcanoPodGroup] builds its Volcano PodGroup.
//
// # The driver pod (cluster mode)
//
// k8sconf.DriverConf resolves the driver's keys the same way, and
// [BuildDriverPod] applies Spark's driver steps: basic (name
// <prefix>-driver, labels spark-app-selector and spark-role=driver, image,
// CPU and memory from spark.driver.*, the application binary run with
// --properties-file [DriverConfFile], the pod's IP and name from the
// downward API, GOMEMLIMIT and GOMAXPROCS, spark.kubernetes.driverEnv.*
// (sensitive values by secretKeyRef from [DriverSecret]), the RPC and UI
// ports, [AnnotationUIToken] when the UI asks for the application's token,
// a restricted securityContext), the service account, then the executor steps it
// shares (mount secrets, env secrets, mount volumes, local dirs) and the
// mount of the driver ConfigMap. [DriverService] (headless) and
// [DriverConfigMap] are created after the pod, owned by it.
//
// # Pod templates
//
// The template (spark.kubernetes.executor.podTemplateFile) is the base and
// the steps add to it. The executor container is the one named by
// spark.kubernetes.executor.podTemplateContainerName, else the template's
// first container; other containers are kept as they are. Which side wins:
//
//   - drover's: the pod name and namespace, restartPolicy (Never), the
//     labels drover sets, the memory request and limit and the CPU request;
//     the CPU limit, image, pull policy, scheduler name and
//     terminationGracePeriodSeconds when their keys are set; the command
//     when ExecutorConf.Command is set (the arguments are then cleared);
//   - merged, drover's winning for the same key: labels, annotations, node
//     selectors;
//   - appended after the template's: pull secrets, environment variables
//     (Kubernetes lets a later variable win), volumes and mounts (duplicate
//     volume names or mount paths are errors);
//   - the template's: everything else, such as tolerations, affinity, other
//     resources (ephemeral storage, GPUs), the service account when it names
//     one, and the container's securityContext when it has one (otherwise
//     the container gets the restricted one).
//
// What the API server fills in (status, uid, resourceVersion, ownerReferences,
// …) is dropped from a template, so `kubectl get pod -o yaml` output works.
//
// Nothing here talks to the API server: the package is pure and tested
// with golden files (testdata/*.yaml; go test -update rewrites them).
package podspec
