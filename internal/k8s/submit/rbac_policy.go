package submit

import (
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// A Role cannot tell one application's objects from another's: with it,
// any driver of the namespace could create a pod that mounts another
// application's Secret drover-exec-<app>-auth (its executors' key), or
// delete and patch another application's pods. The confinement policy, a
// ValidatingAdmissionPolicy with its binding, closes that. It applies only
// to requests made with a token of the driver's service account that is
// bound to a pod (the kubelet mounts such tokens; they carry the pod's
// name and uid, which admission reads from the user's extra fields), so
// users, drover submit and client-mode drivers outside pods are not
// affected. Such a request is refused unless:
//
//   - what it creates, changes or deletes (pods, ConfigMaps, Secrets,
//     Services, claims, Volcano PodGroups) is owned by the driver pod (an
//     ownerReference naming it and its uid), or is the driver pod itself
//     (the driver annotates it); for a change, before and after; for a
//     delete-collection, item by item (the API server admits each);
//   - the drover objects it creates (named drover-exec-<id>-auth,
//     drover-exec-<id>-conf-map, drover-drv-<id>-secret, …), the drover
//     Secrets its pods read (secret volumes, projected secrets, env
//     secretKeyRef, envFrom secretRef) and the spark-app-selector label of
//     what it creates or changes are the driver's own application's.
//     Admission sees the driver pod's name, not its labels; a cluster-mode
//     driver pod is named <app name>-<first 8 characters of the id>-driver
//     (podspec.defaultPodNamePrefix) and drover's objects embed the id
//     (without its drover- or spark- prefix; podspec.appIDPart), so an id
//     is the driver's when its pod's name ends with
//     -<the id's first 8 characters>-driver. drover's ids carry 16 random
//     hex digits: two applications of a namespace share the first 8 once
//     in 4 billion pairs; ids set with spark.app.id should differ there.
//     Secrets of other names (the user's, which
//     spark.kubernetes.executor.secrets.* and secretKeyRef.* name) pass:
//     the cluster cannot tell which of them the application was given.
//     A client-mode driver in a pod that runs as this account is confined
//     too, and its pod's name claims no id: it needs another account;
//   - the Secrets it creates are Opaque: the token controller fills a
//     kubernetes.io/service-account-token Secret with a token that is not
//     bound to a pod, which would escape the policy;
//   - the pods it creates hold no token of the driver's account (a pod
//     named like another application's driver would act as that driver),
//     and it adds no ephemeral containers (they could read any Secret).
const (
	extraPodName = "authentication.kubernetes.io/pod-name"
	extraPodUID  = "authentication.kubernetes.io/pod-uid"
)

// ConfinementPolicyName names the policy, and its binding, that confine the
// drivers of account sa in namespace ns. Namespaces have no dots, so the
// names of two accounts never meet.
func ConfinementPolicyName(ns, sa string) string { return "drover-confine." + ns + "." + sa }

// The CEL below binds a value to a name with a one-element list:
// [value].all(name, body) is body with name = value (Kubernetes offers
// no cel.bind), so a value is written once however often it is used.

// claimsID is CEL that is true when the application id part id (a CEL
// string expression, without drover- or spark-) is the driver's: the
// driver pod's name is <podStem>-driver and podStem ends with -<the id's
// first 8 characters> (all of it when shorter).
func claimsID(id string) string {
	return `[` + id + `].all(id, variables.podStem.endsWith('-' + (id.size() > 8 ? id.substring(0, 8) : id)))`
}

// ownName is CEL that is true when name (a CEL string expression) is not a
// drover application object's name, or is one of the driver's own
// application: drover-exec-<id>… or drover-drv-<id>…, ending with one of
// the suffixes podspec gives them (-auth, -secret, -conf-map).
func ownName(name string) string {
	return `[` + name + `].all(name, !(name.startsWith('drover-exec-') || name.startsWith('drover-drv-')) || ` +
		`['drover-exec-', 'drover-drv-'].exists(pfx, name.startsWith(pfx) && ` +
		`['-auth', '-secret', '-conf-map'].exists(sfx, name.endsWith(sfx) && name.size() > pfx.size() + sfx.size() && ` +
		claimsID(`name.substring(pfx.size(), name.size() - sfx.size())`) + `)))`
}

// ownedBy is CEL that is true when obj (object or oldObject) is the driver
// pod itself or is owned by it.
func ownedBy(obj string) string {
	return obj + ` != null && (` +
		`(request.resource.resource == 'pods' && ` + obj + `.metadata.name == variables.podName && ` + obj + `.metadata.uid == variables.podUID) || ` +
		obj + `.metadata.?ownerReferences.orValue([]).exists(r, ` +
		`r.apiVersion == 'v1' && r.kind == 'Pod' && r.name == variables.podName && r.uid == variables.podUID))`
}

// foreignSecretRefs is CEL listing what, in the pod being created, reads a
// drover Secret of another application: secret volumes, projected
// secrets, env secretKeyRef and envFrom secretRef of its containers and
// init containers (a pod is created without ephemeral containers).
func foreignSecretRefs() string {
	const vols = `object.spec.?volumes.orValue([])`
	return `(request.resource.resource == 'pods' && request.?subResource.orValue('') == '' && request.operation == 'CREATE') ? ` +
		vols + `.filter(v, has(v.secret) && !` + ownName(`v.secret.?secretName.orValue('')`) + `)` +
		`.map(v, 'Secret ' + v.secret.?secretName.orValue('')) + ` +
		vols + `.filter(v, has(v.projected) && v.projected.?sources.orValue([]).exists(s, has(s.secret) && !` + ownName(`s.secret.?name.orValue('')`) + `))` +
		`.map(v, 'projected volume ' + v.name) + ` +
		`variables.containers.filter(c, c.?env.orValue([]).exists(e, has(e.valueFrom) && has(e.valueFrom.secretKeyRef) && !` +
		ownName(`e.valueFrom.secretKeyRef.?name.orValue('')`) + `))` +
		`.map(c, 'env of container ' + c.name) + ` +
		`variables.containers.filter(c, c.?envFrom.orValue([]).exists(e, has(e.secretRef) && !` + ownName(`e.secretRef.?name.orValue('')`) + `))` +
		`.map(c, 'envFrom of container ' + c.name) : []`
}

// confinementPolicy returns the policy and binding for the drivers of
// account sa in namespace ns.
func confinementPolicy(ns, sa string) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding, error) {
	name := ConfinementPolicyName(ns, sa)
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return nil, nil, fmt.Errorf("namespace and service account names too long for the confinement policy's name %q: %s", name, strings.Join(msgs, "; "))
	}
	// Names come from validated DNS names: no quotes to escape in CEL.
	user := "system:serviceaccount:" + ns + ":" + sa
	fail := admissionv1.Fail
	ops := []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete}
	who := `'drover: the driver pod ' + variables.podName + ' (service account ` + ns + `/` + sa + `) '`
	what := `request.resource.resource + ' ' + request.namespace + '/' + variables.objName`
	appLabel := `object.metadata.labels['` + snapshot.LabelAppID + `']`
	// podspec.appIDPart: the id without drover- or spark-, lower case, a
	// run of other characters than letters and digits made one '-' (runs
	// of up to four, which is what CEL without a loop can do).
	labelID := `[` + appLabel + `].all(app, ` + claimsID(`((app.startsWith('drover-') && app.size() > 7) ? app.substring(7) : `+
		`(app.startsWith('spark-') && app.size() > 6) ? app.substring(6) : app).lowerAscii()`+
		`.replace('_', '-').replace('.', '-').replace('--', '-').replace('--', '-')`) + `)`
	ownedNew, ownedOld := ownedBy("object"), ownedBy("oldObject")
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "drover"}}
	}
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{Kind: "ValidatingAdmissionPolicy", APIVersion: "admissionregistration.k8s.io/v1"},
		ObjectMeta: meta(),
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
				{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: ops,
					Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
						Resources: []string{"pods", "pods/ephemeralcontainers", "configmaps", "secrets", "services", "persistentvolumeclaims"}},
				}},
				// --volcano's PodGroups, owned by the driver pod too.
				{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: ops,
					Rule:       admissionv1.Rule{APIGroups: []string{"scheduling.volcano.sh"}, APIVersions: []string{"*"}, Resources: []string{"podgroups"}},
				}},
			}},
			MatchConditions: []admissionv1.MatchCondition{
				{Name: "drivers-account", Expression: `request.userInfo.username == '` + user + `'`},
				{Name: "token-bound-to-a-pod", Expression: `has(request.userInfo.extra) && '` + extraPodName + `' in request.userInfo.extra && '` +
					extraPodUID + `' in request.userInfo.extra`},
			},
			Variables: []admissionv1.Variable{
				{Name: "podName", Expression: `request.userInfo.extra['` + extraPodName + `'][0]`},
				{Name: "podUID", Expression: `request.userInfo.extra['` + extraPodUID + `'][0]`},
				{Name: "podStem", Expression: `variables.podName.endsWith('-driver') ? variables.podName.substring(0, variables.podName.size() - 7) : ''`},
				// request.name is empty in a delete-collection's items.
				{Name: "objName", Expression: `(object != null ? object : oldObject).metadata.?name.orValue('')`},
				{Name: "containers", Expression: `object.spec.?containers.orValue([]) + object.spec.?initContainers.orValue([])`},
				{Name: "foreignSecretRefs", Expression: foreignSecretRefs()},
			},
			Validations: []admissionv1.Validation{
				{
					Expression:        `request.operation == 'DELETE' || ` + ownedNew,
					Message:           "drover: a driver may create and change only objects its pod owns",
					MessageExpression: who + ` + 'may create and change only objects its pod owns (an ownerReference to it with its uid): not ' + ` + what,
				},
				{
					Expression:        `request.operation == 'CREATE' || ` + ownedOld,
					Message:           "drover: a driver may change and delete only objects its pod owns",
					MessageExpression: who + ` + 'may change and delete only objects its pod owns: ' + ` + what + ` + ' is another\'s'`,
				},
				{
					Expression:        `request.?subResource.orValue('') != 'ephemeralcontainers'`,
					Message:           "drover: a driver adds no ephemeral containers",
					MessageExpression: who + ` + 'adds no ephemeral containers'`,
				},
				{
					Expression:        `variables.foreignSecretRefs.size() == 0`,
					Message:           "drover: a driver's pods may read only its own application's drover Secrets",
					MessageExpression: who + ` + 'may give its pods only its own application\'s drover Secrets: pod ' + variables.objName + ' reads another application\'s in ' + variables.foreignSecretRefs.join(', ')`,
				},
				{
					Expression: `request.resource.resource != 'pods' || request.operation != 'CREATE' || ` +
						`object.spec.?serviceAccountName.orValue('default') != '` + sa + `' || ` +
						`!object.spec.?volumes.orValue([]).exists(v, has(v.projected) && v.projected.?sources.orValue([]).exists(s, has(s.serviceAccountToken)))`,
					Message:           "drover: a driver's pods may not hold a token of the driver's account",
					MessageExpression: who + ` + 'may not give pod ' + variables.objName + ' a token of its own account: set automountServiceAccountToken: false'`,
				},
				{
					Expression:        `request.resource.resource != 'secrets' || request.operation == 'DELETE' || object.?type.orValue('Opaque') == 'Opaque'`,
					Message:           "drover: a driver creates only Opaque Secrets",
					MessageExpression: who + ` + 'creates only Opaque Secrets, not ' + object.type`,
				},
				{
					Expression: `!(request.resource.resource in ['configmaps', 'secrets']) || request.operation != 'CREATE' || ` +
						ownName("object.metadata.name"),
					Message:           "drover: a driver creates drover objects only of its own application",
					MessageExpression: who + ` + 'creates drover objects only of its own application: ' + ` + what + ` + ' is named for another'`,
				},
				{
					Expression:        `request.operation == 'DELETE' || !('` + snapshot.LabelAppID + `' in object.metadata.?labels.orValue({})) || ` + labelID,
					Message:           "drover: a driver labels objects only with its own application's id",
					MessageExpression: who + ` + 'labels objects only with its own application\'s id: ' + ` + what + ` + ' has ` + snapshot.LabelAppID + `=' + ` + appLabel,
				},
			},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{Kind: "ValidatingAdmissionPolicyBinding", APIVersion: "admissionregistration.k8s.io/v1"},
		ObjectMeta: meta(),
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return policy, binding, nil
}
