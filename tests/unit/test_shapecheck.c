/* common/pod/shapecheck.c: a pod built from the shape's own generators passes;
 * the API server's defaults added pass; each departure fails with its
 * stable code (the driver differing in any member, any container but the
 * driver writing hangar-home, init and ephemeral containers near the
 * driver, uids, capabilities, host namespaces); the webhook's reading sees
 * only the sidecar's scope; a volume mounted twice counts as its loosest
 * mount; the containers that can run beside the agent's are listed. */
#include "shapecheck.h"

#include "cleanup.h"
#include "unit.h"

static hg_config_t cfg;

static void setup(void)
{
        ck_assert_int_eq(config_init_defaults(&cfg), 0);
}

static void teardown(void)
{
        config_free(&cfg);
}

/* The injected pod, from the generators the webhook injects with. */
static json_t *in_shape(void)
{
        json_t *agent =
            json_pack("{s:s, s:s, s:[]}", "name", "sandbox", "image", "img:1", "volumeMounts");
        json_t *volumes = json_array();
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                json_array_append_new(volumes, shape_volume_json(&cfg, v));
                json_t *m = shape_mount_json(&cfg, SHAPE_ROLE_AGENT, v);
                if (m)
                        json_array_append_new(json_object_get(agent, "volumeMounts"), m);
        }
        /* The uid the agent runs as, at pod level (as docs/chart.md's example). */
        return json_pack("{s:s, s:s, s:{s:o, s:[o, o], s:b, s:{s:i}}}", "apiVersion", "v1", "kind",
                         "Pod", "spec", "volumes", volumes, "containers", agent,
                         shape_driver_container_json(&cfg, "img:1"), "shareProcessNamespace", 0,
                         "securityContext", "runAsUser", 1000);
}

/* Sets path in pod to the JSON literal value. */
static void add(json_t *pod, const char *path, const char *value)
{
        _unit_json_ json_t *v = unit_json(value);
        ck_assert_msg(unit_apply_add(pod, path, v) == 0, "cannot set %s", path);
}

/* From pod's report: the codes of its failing checks (each once), or the
 * names in its other_containers; comma-joined, "" for none. */
static char *report_list(json_t *pod, bool codes)
{
        bool pass = false;
        _unit_json_ json_t *r = shapecheck_pod(&cfg, pod, &pass);
        ck_assert_ptr_nonnull(r);
        static char out[1024];
        out[0] = '\0';
        size_t n = 0, i;
        json_t *c;
        json_array_foreach (json_object_get(r, codes ? "checks" : "other_containers"), i, c) {
                const char *item = json_string_value(c);
                if (codes) {
                        if (strcmp(json_string_value(json_object_get(c, "status")), "fail") != 0)
                                continue;
                        item = json_string_value(json_object_get(c, "code"));
                        if (strstr(out, item))
                                continue;
                }
                n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", n ? "," : "", item);
        }
        if (codes)
                ck_assert(pass == (out[0] == '\0'));
        return out;
}

/* The failing codes ("" when it passes). */
static char *failing(json_t *pod)
{
        return report_list(pod, true);
}

/* The containers that can run beside the agent's. */
static char *others(json_t *pod)
{
        return report_list(pod, false);
}

START_TEST(generated_pod_passes)
{
        _unit_json_ json_t *pod = in_shape();
        ck_assert_str_eq(failing(pod), "");
        /* The API server's defaults, with their default values, are fine;
         * so is anything it adds at pod level. */
        add(pod, "/spec/containers/1/terminationMessagePath", "\"/dev/termination-log\"");
        add(pod, "/spec/containers/1/terminationMessagePolicy", "\"File\"");
        add(pod, "/spec/dnsPolicy", "\"ClusterFirst\"");
        add(pod, "/spec/enableServiceLinks", "true");
        ck_assert_str_eq(failing(pod), "");
        /* Another container reading hangar-home, as a uid of its own. */
        add(pod, "/spec/containers/-",
            "{\"name\": \"reader\", \"image\": \"r\", \"securityContext\": {\"runAsUser\": 2000},"
            " \"volumeMounts\": [{\"name\": \"hangar-home\", \"mountPath\": \"/h\", \"readOnly\": "
            "true}]}");
        ck_assert_str_eq(failing(pod), "");
}
END_TEST

START_TEST(driver_differs_in_any_member)
{
        cfg.driver_probes = true; /* the probes' members are the shape's too */
        /* Each of these runs or changes something in the driver's uid. */
        static const struct {
                const char *member, *value;
        } cases[] = {
            {"command", "[\"other\"]"}, /* the configured command, nothing else */
            {"command", "[\"sleep\", \"infinity\", \"x\"]"},
            {"args", "[\"-c\", \"x\"]"},
            {"lifecycle", "{\"postStart\": {\"exec\": {\"command\": [\"sh\"]}}}"},
            {"livenessProbe", "{\"exec\": {\"command\": [\"sh\"]}}"},
            {"readinessProbe", "{\"exec\": {\"command\": [\"sh\"]}}"},
            {"startupProbe", "{\"exec\": {\"command\": [\"sh\"]}}"},
            {"livenessProbe/periodSeconds", "100000"}, /* the shape's timing, exactly */
            {"livenessProbe/exec/command/0", "\"sh\""},
            {"startupProbe/failureThreshold", "1"},
            {"env", "[{\"name\": \"LD_PRELOAD\", \"value\": \"/tmp/x.so\"}]"},
            {"envFrom", "[{\"configMapRef\": {\"name\": \"c\"}}]"},
            {"workingDir", "\"/tmp\""},
            {"stdin", "true"},
            {"stdinOnce", "true"},
            {"tty", "true"},
            {"ports", "[{\"containerPort\": 80}]"},
            {"restartPolicy", "\"Always\""},
            {"image", "\"evil:1\""},          /* another image than the agent's */
            {"imagePullPolicy", "\"Never\""}, /* Always is AlwaysPullImages' (accepted) */
            {"resources", "{\"requests\": {\"cpu\": \"1\", \"memory\": \"64Mi\"}}"},
            {"terminationMessagePath", "\"/var/lib/hangar-ctl/x\""}, /* not the default */
            {"terminationMessagePolicy", "\"FallbackToLogsOnError\""},
            {"volumeDevices", "[{\"name\": \"d\", \"devicePath\": \"/dev/x\"}]"},
            {"resizePolicy", "[{\"resourceName\": \"cpu\", \"restartPolicy\": \"NotRequired\"}]"},
            {"securityContext/procMount", "\"Unmasked\""},
            {"securityContext/procMount", "\"Default\""}, /* not the shape's either */
            {"securityContext/capabilities/add", "[\"SYS_PTRACE\"]"},
            {"securityContext/runAsUser", "0"},
            {"securityContext/appArmorProfile", "{\"type\": \"Unconfined\"}"},
            {"securityContext/seccompProfile", "{\"type\": \"Unconfined\"}"},
            {"volumeMounts/-", "{\"name\": \"data\", \"mountPath\": \"/data\"}"},
            {"volumeMounts/0/subPath", "\"x\""},
            {"volumeMounts/1/mountPropagation", "\"Bidirectional\""},
            {"unknownMember", "1"}, /* a member a later Kubernetes adds: refused too */
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                _unit_json_ json_t *pod = in_shape();
                char path[128];
                (void)snprintf(path, sizeof(path), "/spec/containers/1/%s", cases[i].member);
                add(pod, path, cases[i].value);
                ck_assert_msg(strcmp(failing(pod), "spec.driver") == 0, "%s = %s: failing \"%s\"",
                              cases[i].member, cases[i].value, failing(pod));
                /* The webhook's reading refuses it as well, naming the member. */
                shapecheck_finding_t f;
                ck_assert_int_eq(shapecheck_sidecar(&cfg, pod, &f), 1);
                ck_assert_str_eq(f.code, "spec.driver");
                char member[64];
                (void)snprintf(member, sizeof(member), "%.*s", (int)strcspn(cases[i].member, "/"),
                               cases[i].member);
                ck_assert_msg(strstr(f.detail, member), "%s: %s", member, f.detail);
        }
        /* A member of the shape missing is as bad as one too many. */
        _unit_json_ json_t *pod = in_shape();
        json_object_del(unit_at(pod, "/spec/containers/1"), "securityContext");
        ck_assert_str_eq(failing(pod), "spec.driver");
        /* Two containers by the driver's name. */
        _unit_json_ json_t *twice = in_shape();
        add(twice, "/spec/initContainers",
            "[{\"name\": \"hangar-driver\", \"image\": \"img:1\", \"securityContext\": "
            "{\"runAsUser\": 1000}}]");
        ck_assert_str_eq(failing(twice), "spec.driver");
}
END_TEST

START_TEST(departures_fail_with_their_code)
{
        static const struct {
                const char *path, *value, *code;
        } cases[] = {
            {"/spec/shareProcessNamespace", "true", "spec.share-process-namespace"},
            {"/spec/hostPID", "true", "spec.host-pid"},
            {"/spec/hostNetwork", "true", "spec.host-network"},
            {"/spec/hostIPC", "true", "spec.host-ipc"},
            {"/spec/containers/0/securityContext", "{\"capabilities\": {\"add\": [\"CAP_KILL\"]}}",
             "spec.agent-capabilities"},
            /* Any capability added beside the driver, harmless-looking or not. */
            {"/spec/containers/0/securityContext",
             "{\"capabilities\": {\"add\": [\"NET_BIND_SERVICE\"]}}", "spec.agent-capabilities"},
            {"/spec/containers/0/securityContext", "{\"runAsUser\": 1001}", "spec.agent-uid"},
            {"/spec/containers/0/securityContext", "{\"runAsUser\": 0}", "spec.agent-uid"},
            {"/spec/securityContext", "{\"runAsUser\": 1001}", "spec.agent-uid"},
            /* Unset at both levels: the image's USER decides, unknown here. */
            {"/spec/securityContext", "{}", "spec.agent-uid"},
            {"/spec/securityContext", "{\"runAsNonRoot\": true}", "spec.agent-uid"},
            {"/spec/containers/0/securityContext", "{\"privileged\": true}", "spec.privileged"},
            {"/spec/volumes/1/emptyDir", "{}", "spec.volume"},
            {"/spec/volumes/0/hostPath", "{\"path\": \"/\"}", "spec.volume"},
            {"/spec/volumes/-", "{\"name\": \"hangar-ctl\", \"emptyDir\": {}}", "spec.volume"},
            /* A second, writable mount of hangar-home in the agent. */
            {"/spec/containers/0/volumeMounts/-",
             "{\"name\": \"hangar-home\", \"mountPath\": \"/h\"}", "spec.mount"},
            /* The agent's hangar-home mount not as the shape has it. */
            {"/spec/containers/0/volumeMounts/0/subPath", "\"sub\"", "spec.mount"},
            {"/spec/containers/0/volumeMounts/0/mountPath", "\"/elsewhere\"", "spec.mount"},
            /* The agent's own volume over part of hangar-home or at hangar-ctl's path. */
            {"/spec/containers/0/volumeMounts/-",
             "{\"name\": \"mine\", \"mountPath\": \"/var/lib//hangar/run/\"}", "spec.mount"},
            {"/spec/containers/0/volumeMounts/-",
             "{\"name\": \"mine\", \"mountPath\": \"/var/lib/hangar-ctl\"}", "spec.mount"},
            /* hangar-ctl in an init container, read-only or not. */
            {"/spec/initContainers",
             "[{\"name\": \"i\", \"securityContext\": {\"runAsUser\": 1000}, \"volumeMounts\": "
             "[{\"name\": \"hangar-ctl\", \"mountPath\": \"/c\", \"readOnly\": true}]}]",
             "spec.mount"},
            /* hangar-home in an init or ephemeral container, even read-only. */
            {"/spec/initContainers",
             "[{\"name\": \"i\", \"securityContext\": {\"runAsUser\": 1000}, \"volumeMounts\": "
             "[{\"name\": \"hangar-home\", \"mountPath\": \"/h\", \"readOnly\": true}]}]",
             "spec.mount"},
            {"/spec/ephemeralContainers",
             "[{\"name\": \"e\", \"securityContext\": {\"runAsUser\": 1000}, \"volumeMounts\": "
             "[{\"name\": \"hangar-home\", \"mountPath\": \"/h\", \"readOnly\": true}]}]",
             "spec.mount"},
            /* Another regular container writing hangar-home. */
            {"/spec/containers/-",
             "{\"name\": \"o\", \"securityContext\": {\"runAsUser\": 1000}, \"volumeMounts\": "
             "[{\"name\": \"hangar-home\", \"mountPath\": \"/h\"}]}",
             "spec.mount"},
            /* An ephemeral container joining the driver's PID namespace. */
            {"/spec/ephemeralContainers",
             "[{\"name\": \"debug\", \"targetContainerName\": \"hangar-driver\","
             " \"securityContext\": {\"runAsUser\": 1000}}]",
             "spec.target-driver"},
            /* Containers beside the driver: as its uid, as root, unknown, caps. */
            {"/spec/containers/-", "{\"name\": \"o\", \"securityContext\": {\"runAsUser\": 1001}}",
             "spec.uid"},
            {"/spec/containers/-",
             "{\"name\": \"o\", \"securityContext\": {\"runAsUser\": 2000, \"runAsGroup\": 1001}}",
             "spec.uid"},
            {"/spec/securityContext/runAsGroup", "1001", "spec.agent-uid"},
            {"/spec/initContainers", "[{\"name\": \"i\", \"securityContext\": {\"runAsUser\": 0}}]",
             "spec.uid"},
            {"/spec/ephemeralContainers",
             "[{\"name\": \"e\", \"securityContext\": {\"runAsUser\": 1001}}]", "spec.uid"},
            {"/spec/containers/-",
             "{\"name\": \"o\", \"securityContext\": {\"runAsUser\": \"1000\"}}", "spec.uid"},
            {"/spec/containers/-",
             "{\"name\": \"o\", \"securityContext\": {\"capabilities\": {\"add\": "
             "[\"NET_ADMIN\"]}}}",
             "spec.capabilities"},
            {"/spec/containers/-",
             "{\"name\": \"o\", \"securityContext\": {\"capabilities\": {\"add\": \"ALL\"}}}",
             "spec.capabilities"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                _unit_json_ json_t *pod = in_shape();
                add(pod, cases[i].path, cases[i].value);
                ck_assert_msg(strstr(failing(pod), cases[i].code), "case %zu (%s): failing %s", i,
                              cases[i].path, failing(pod));
        }
        /* No agent, no driver. */
        _unit_json_ json_t *bare =
            unit_json("{\"spec\": {\"containers\": [{\"name\": \"app\", \"image\": \"i\"}]}}");
        ck_assert_str_eq(failing(bare), "spec.no-agent");
        _unit_json_ json_t *no_driver = in_shape();
        json_array_remove(json_object_get(json_object_get(no_driver, "spec"), "containers"), 1);
        ck_assert_ptr_nonnull(strstr(failing(no_driver), "spec.no-driver"));
}
END_TEST

START_TEST(quantities_compared_by_value)
{
        /* The API server stores quantities in canonical form: a configured
         * "0.05" comes back as "50m", "65536Ki" as "64Mi". Same value, same
         * shape; another value is not. */
        free(cfg.driver_cpu_request);
        cfg.driver_cpu_request = strdup("0.05");
        free(cfg.ctl_size_limit);
        cfg.ctl_size_limit = strdup("65536Ki");
        ck_assert_ptr_nonnull(cfg.driver_cpu_request);
        ck_assert_ptr_nonnull(cfg.ctl_size_limit);
        _unit_json_ json_t *pod = in_shape();
        ck_assert_str_eq(failing(pod), "");
        add(pod, "/spec/containers/1/resources/requests/cpu", "\"50m\"");
        add(pod, "/spec/volumes/1/emptyDir/sizeLimit", "\"64Mi\"");
        ck_assert_str_eq(failing(pod), "");
        add(pod, "/spec/containers/1/resources/requests/cpu", "\"51m\"");
        ck_assert_str_eq(failing(pod), "spec.driver");
        _unit_json_ json_t *vol = in_shape();
        add(vol, "/spec/volumes/1/emptyDir/sizeLimit", "\"65Mi\"");
        ck_assert_str_eq(failing(vol), "spec.volume");
        /* A limit (or request) the shape does not set is what LimitRanger
         * adds on the API server's second round in a namespace with a
         * LimitRange: accepted, as long as it is a quantity. Anything else
         * in resources (claims) is not, nor a shape's quantity changed. */
        _unit_json_ json_t *lim = in_shape();
        add(lim, "/spec/containers/1/resources/limits", "{\"cpu\": \"1\", \"memory\": \"512Mi\"}");
        add(lim, "/spec/containers/1/resources/requests/ephemeral-storage", "\"1Gi\"");
        ck_assert_str_eq(failing(lim), "");
        add(lim, "/spec/containers/1/resources/limits/cpu", "1");
        ck_assert_str_eq(failing(lim), "spec.driver");
        _unit_json_ json_t *claims = in_shape();
        add(claims, "/spec/containers/1/resources/claims", "[{\"name\": \"gpu\"}]");
        ck_assert_str_eq(failing(claims), "spec.driver");
        /* AlwaysPullImages' policy is accepted, no other. */
        _unit_json_ json_t *pull = in_shape();
        add(pull, "/spec/containers/1/imagePullPolicy", "\"Always\"");
        ck_assert_str_eq(failing(pull), "");
        add(pull, "/spec/containers/1/imagePullPolicy", "\"Never\"");
        ck_assert_str_eq(failing(pull), "spec.driver");
        _unit_json_ json_t *gone = in_shape();
        add(gone, "/spec/containers/1/resources", "{\"limits\": {\"cpu\": \"1\"}}");
        ck_assert_str_eq(failing(gone), "spec.driver");
}
END_TEST

START_TEST(uid_from_container_or_pod)
{
        /* The container's runAsUser wins over the pod's. */
        _unit_json_ json_t *pod = in_shape();
        add(pod, "/spec/securityContext/runAsUser", "1001");
        add(pod, "/spec/containers/0/securityContext", "{\"runAsUser\": 1000}");
        ck_assert_str_eq(failing(pod), "");
        /* Set on the container only: fine too. */
        _unit_json_ json_t *own = in_shape();
        add(own, "/spec/securityContext", "{}");
        add(own, "/spec/containers/0/securityContext", "{\"runAsUser\": 1000}");
        ck_assert_str_eq(failing(own), "");
        /* A container that inherits the pod's root. */
        _unit_json_ json_t *root = in_shape();
        add(root, "/spec/securityContext/runAsUser", "0");
        add(root, "/spec/containers/0/securityContext", "{\"runAsUser\": 1000}");
        add(root, "/spec/containers/-", "{\"name\": \"o\"}");
        ck_assert_str_eq(failing(root), "spec.uid");
}
END_TEST

/* "/var/lib/" + "y/" * k + "../" * k + "hangar": canonically /var/lib/hangar. */
static char *long_path(size_t k)
{
        static char buf[4 * 8192];
        size_t n = (size_t)snprintf(buf, sizeof(buf), "/var/lib/");
        for (size_t i = 0; i < k; i++)
                n += (size_t)snprintf(buf + n, sizeof(buf) - n, "y/");
        for (size_t i = 0; i < k; i++)
                n += (size_t)snprintf(buf + n, sizeof(buf) - n, "../");
        (void)snprintf(buf + n, sizeof(buf) - n, "hangar");
        return buf;
}

START_TEST(long_agent_paths_fail_closed)
{
        static const size_t k[] = {100, 2100};
        for (size_t i = 0; i < ARRAY_SIZE(k); i++) {
                _unit_json_ json_t *pod = in_shape();
                json_t *m = json_pack("{s:s, s:s}", "name", "mine", "mountPath", long_path(k[i]));
                json_array_append_new(unit_at(pod, "/spec/containers/0/volumeMounts"), m);
                ck_assert_str_eq(failing(pod), "spec.mount");
        }
}
END_TEST

START_TEST(webhook_reads_the_sidecar_scope)
{
        shapecheck_finding_t f;
        _unit_json_ json_t *pod = in_shape();
        ck_assert_int_eq(shapecheck_sidecar(&cfg, pod, &f), 0);
        /* The pod's own choices (uids, capabilities) are the verdict's, not
         * the webhook's: it injects whatever they are. */
        add(pod, "/spec/securityContext", "{}");
        add(pod, "/spec/containers/0/securityContext",
            "{\"capabilities\": {\"add\": [\"NET_RAW\"]}}");
        ck_assert_str_eq(failing(pod), "spec.agent-uid,spec.agent-capabilities");
        ck_assert_int_eq(shapecheck_sidecar(&cfg, pod, &f), 0);
        /* The first sidecar finding, with its code and what it is about. */
        add(pod, "/spec/hostIPC", "true");
        add(pod, "/spec/containers/1/args", "[\"x\"]");
        ck_assert_int_eq(shapecheck_sidecar(&cfg, pod, &f), 1);
        ck_assert_str_eq(f.code, "spec.driver");
        ck_assert_msg(strstr(f.detail, "hangar-driver.args is not part of the shape"), "%s",
                      f.detail);
}
END_TEST

/* The probe reads the gVisor hints as stored, as the guard does: on a pod
 * of a gVisor RuntimeClass, hangar's hints (or GKE Sandbox's agreeing
 * values) pass; missing ones, or values that change how gVisor mounts a
 * hangar volume, fail spec.annotations; so does a force-shared. Before
 * injection (the webhook's reading) the six keys' values do not count. */
START_TEST(gvisor_hints_as_stored)
{
        _unit_json_ json_t *pod = in_shape();
        add(pod, "/spec/runtimeClassName", "\"gvisor\"");
        ck_assert_str_eq(failing(pod), "spec.annotations");
        add(pod, "/metadata", "{\"annotations\": {}}");
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++)
                for (unsigned i = 0; i < SHAPE_GVISOR_ANNOTATIONS; i++) {
                        const char *key;
                        char value[96];
                        ck_assert_int_eq(
                            shape_gvisor_annotation(&cfg, v, i, &key, value, sizeof(value)), 0);
                        json_object_set_new(
                            json_object_get(json_object_get(pod, "metadata"), "annotations"), key,
                            json_string(value));
                }
        ck_assert_str_eq(failing(pod), "");
        /* GKE's values for the same keys. */
        add(pod, "/metadata/annotations/dev.gvisor.spec.mount.hangar-ctl.share", "\"container\"");
        add(pod, "/metadata/annotations/dev.gvisor.spec.mount.hangar-ctl.options", "\"rw\"");
        add(pod, "/metadata/annotations/dev.gvisor.spec.mount.hangar-home.options", "\"rw\"");
        add(pod, "/metadata/annotations/dev.gvisor.spec.mount.other.share", "\"shared\"");
        ck_assert_str_eq(failing(pod), "");
        shapecheck_finding_t f;
        ck_assert_int_eq(shapecheck_sidecar(&cfg, pod, &f), 0);
        /* What would move hangar-ctl out of the sandbox's memory. */
        add(pod, "/metadata/annotations/dev.gvisor.empty-dir.hangar-ctl.force-shared", "\"true\"");
        ck_assert_str_eq(failing(pod), "spec.annotations");
        ck_assert_int_eq(shapecheck_sidecar(&cfg, pod, &f), 1);
        ck_assert_str_eq(f.code, "spec.annotations");
        ck_assert_msg(strstr(f.detail, "force-shared"), "%s", f.detail);
        add(pod, "/metadata/annotations/dev.gvisor.empty-dir.hangar-ctl.force-shared", "\"false\"");
        add(pod, "/metadata/annotations/dev.gvisor.spec.mount.hangar-ctl.type", "\"bind\"");
        ck_assert_str_eq(failing(pod), "spec.annotations");
        /* Before injection the webhook replaces that value: not a finding. */
        ck_assert_int_eq(shapecheck_annotations(&cfg, pod, &f), 0);
        /* Every failure is reported to the probe, each naming its key. */
        add(pod, "/metadata/annotations/dev.gvisor.spec.mount.hangar-home.share", "\"shared\"");
        bool pass = true;
        _unit_json_ json_t *r = shapecheck_pod(&cfg, pod, &pass);
        ck_assert(!pass);
        size_t n = 0, i;
        json_t *c;
        json_array_foreach (json_object_get(r, "checks"), i, c)
                n += strcmp(json_string_value(json_object_get(c, "code")), "spec.annotations") ==
                         0 &&
                     strcmp(json_string_value(json_object_get(c, "status")), "fail") == 0;
        ck_assert_uint_eq(n, 2);
}
END_TEST

START_TEST(token_mounts)
{
        _unit_json_ json_t *plugin =
            unit_json("{\"name\": \"kube-api-access-x1\", \"mountPath\": "
                      "\"/var/run/secrets/kubernetes.io/serviceaccount\", \"readOnly\": true}");
        ck_assert(shapecheck_is_token_mount(plugin));
        ck_assert(shapecheck_is_plugin_token_mount(plugin));
        /* Elsewhere, or something else at the path: a token mount, not the plugin's. */
        _unit_json_ json_t *moved = unit_json(
            "{\"name\": \"kube-api-access-x1\", \"mountPath\": \"/t\", \"readOnly\": true}");
        ck_assert(shapecheck_is_token_mount(moved));
        ck_assert(!shapecheck_is_plugin_token_mount(moved));
        _unit_json_ json_t *under =
            unit_json("{\"name\": \"mine\", \"mountPath\": "
                      "\"/var/run/secrets//kubernetes.io/serviceaccount/t\"}");
        ck_assert(shapecheck_is_token_mount(under));
        ck_assert(!shapecheck_is_plugin_token_mount(under));
        _unit_json_ json_t *writable =
            unit_json("{\"name\": \"kube-api-access-x1\", \"mountPath\": "
                      "\"/var/run/secrets/kubernetes.io/serviceaccount\"}");
        ck_assert(!shapecheck_is_plugin_token_mount(writable));
        _unit_json_ json_t *sub = unit_json("{\"name\": \"kube-api-access-x1\", \"mountPath\": "
                                            "\"/var/run/secrets/kubernetes.io/serviceaccount\", "
                                            "\"readOnly\": true, \"subPath\": \"t\"}");
        ck_assert(!shapecheck_is_plugin_token_mount(sub));
        _unit_json_ json_t *other =
            unit_json("{\"name\": \"data\", \"mountPath\": \"/var/run/secrets/kubernetes.io\"}");
        ck_assert(!shapecheck_is_token_mount(other));
}
END_TEST

START_TEST(loosest_mount_counts)
{
        _unit_json_ json_t *c = unit_json(
            "{\"volumeMounts\": [{\"name\": \"hangar-home\", \"mountPath\": \"/a\", \"readOnly\": "
            "true}, {\"name\": \"hangar-home\", \"mountPath\": \"/b\", \"readOnly\": true}]}");
        ck_assert_int_eq(shapecheck_mount_access(c, SHAPE_VOLUME_HOME), SHAPE_ACCESS_READ_ONLY);
        ck_assert_int_eq(shapecheck_mount_access(c, SHAPE_VOLUME_CTL), SHAPE_ACCESS_ABSENT);
        json_t *rw = unit_json("{\"name\": \"hangar-home\", \"mountPath\": \"/c\"}");
        json_array_append_new(json_object_get(c, "volumeMounts"), rw);
        ck_assert_int_eq(shapecheck_mount_access(c, SHAPE_VOLUME_HOME), SHAPE_ACCESS_READ_WRITE);
        ck_assert_int_eq(shapecheck_role(&cfg, "containers", "sandbox"), SHAPE_ROLE_AGENT);
        ck_assert_int_eq(shapecheck_role(&cfg, "initContainers", "sandbox"),
                         SHAPE_ROLE_INIT_EPHEMERAL);
        ck_assert_int_eq(shapecheck_role(&cfg, "ephemeralContainers", "x"),
                         SHAPE_ROLE_INIT_EPHEMERAL);
        ck_assert_int_eq(shapecheck_role(&cfg, "containers", "x"), SHAPE_ROLE_OTHER);
        ck_assert_int_eq(shapecheck_role(&cfg, "containers", "hangar-driver"), SHAPE_ROLE_DRIVER);
}
END_TEST

/* The containers that can run beside the agent's, for a sealed grade: not
 * the agent, not the driver (in either list), not an init container that
 * ended; a restartable init container, a regular one, an ephemeral one. A
 * fact beside the findings: the pod still passes. */
START_TEST(other_containers_listed)
{
        _unit_json_ json_t *pod = in_shape();
        ck_assert_str_eq(others(pod), "");
        add(pod, "/spec/initContainers",
            "[{\"name\": \"setup\", \"image\": \"s\"}, {\"name\": \"once\", \"image\": \"s\", "
            "\"restartPolicy\": \"Never\"}]");
        ck_assert_str_eq(others(pod), "");
        add(pod, "/spec/initContainers/-",
            "{\"name\": \"native\", \"image\": \"s\", \"restartPolicy\": \"Always\"}");
        add(pod, "/spec/containers/-",
            "{\"name\": \"helper\", \"image\": \"h\", \"securityContext\": {\"runAsUser\": "
            "1000}}");
        add(pod, "/spec/ephemeralContainers",
            "[{\"name\": \"debugger\", \"image\": \"d\", \"targetContainerName\": "
            "\"sandbox\"}]");
        ck_assert_str_eq(failing(pod), "");
        ck_assert_str_eq(others(pod), "native,helper,debugger");

        /* A native-sidecar driver is the driver, not another container. */
        config_free(&cfg);
        ck_assert_int_eq(config_init_defaults(&cfg), 0);
        cfg.driver_native_sidecar = true;
        _unit_json_ json_t *native = in_shape();
        _unit_json_ json_t *driver = json_incref(
            json_array_get(json_object_get(json_object_get(native, "spec"), "containers"), 1));
        json_array_remove(json_object_get(json_object_get(native, "spec"), "containers"), 1);
        json_object_set_new(json_object_get(native, "spec"), "initContainers",
                            json_pack("[O]", driver));
        ck_assert_str_eq(others(native), "");
}
END_TEST

static Suite *shapecheck_suite(void)
{
        Suite *s = suite_create("shapecheck");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, generated_pod_passes);
        tcase_add_test(tc, driver_differs_in_any_member);
        tcase_add_test(tc, departures_fail_with_their_code);
        tcase_add_test(tc, quantities_compared_by_value);
        tcase_add_test(tc, uid_from_container_or_pod);
        tcase_add_test(tc, long_agent_paths_fail_closed);
        tcase_add_test(tc, webhook_reads_the_sidecar_scope);
        tcase_add_test(tc, gvisor_hints_as_stored);
        tcase_add_test(tc, token_mounts);
        tcase_add_test(tc, loosest_mount_counts);
        tcase_add_test(tc, other_containers_listed);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(shapecheck_suite());
}
