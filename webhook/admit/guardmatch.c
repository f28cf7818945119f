#include "guardmatch.h"

#include <string.h>

#include "shape.h"

/* has(P.metadata.annotations) && (K1 in ... || K2 in ...): presence of
 * the key, whatever its value. */
static bool has_record_annotation(json_t *pod)
{
        json_t *a = json_object_get(json_object_get(pod, "metadata"), "annotations");
        return json_is_object(a) && (json_object_get(a, SHAPE_ANNOTATION_STATUS) != NULL ||
                                     json_object_get(a, SHAPE_ANNOTATION_REASON) != NULL);
}

/* has(P.spec.L) && P.spec.L.exists(c, c.name == 'hangar-driver') */
static bool lists_driver(json_t *pod, const char *list)
{
        size_t i;
        json_t *c;
        json_array_foreach (json_object_get(json_object_get(pod, "spec"), list), i, c) {
                const char *name = json_string_value(json_object_get(c, "name"));
                if (name && strcmp(name, SHAPE_DRIVER_CONTAINER) == 0)
                        return true;
        }
        return false;
}

static bool hangar_pod(json_t *pod)
{
        return has_record_annotation(pod) || lists_driver(pod, "containers") ||
               lists_driver(pod, "initContainers");
}

bool guardmatch_hangar_pod(json_t *old_pod, json_t *new_pod)
{
        return hangar_pod(old_pod) || hangar_pod(new_pod);
}
