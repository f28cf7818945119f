#include "runreq.h"

#include <errno.h>
#include <stdlib.h>

#include "cleanup.h"
#include "jsonx.h"

uint32_t runreq_next_id(runreq_pending_t *p)
{
        return ++p->next_id;
}

bool runreq_full(const runreq_pending_t *p)
{
        return p->n >= RUNREQ_OUTSTANDING_MAX;
}

int runreq_add(runreq_pending_t *p, uint32_t id)
{
        if (runreq_full(p))
                return -EBUSY;
        p->ids[p->n++] = id;
        return 0;
}

bool runreq_take(runreq_pending_t *p, uint32_t id)
{
        for (size_t i = 0; i < p->n; i++)
                if (p->ids[i] == id) {
                        p->ids[i] = p->ids[--p->n];
                        return true;
                }
        return false;
}

void runreq_forget_all(runreq_pending_t *p)
{
        p->n = 0;
}

int runreq_args_parse(json_t *argv_j, json_t *timeout_j, json_t *tail_j, runreq_args_t *ret,
                      hg_error_t *err)
{
        size_t argc = json_array_size(argv_j);
        if (!json_is_array(argv_j) || argc == 0 || argc > FRAME_RUN_MAX_ARGS)
                return error_set(err, -EINVAL, "\"argv\" must be 1-%u strings", FRAME_RUN_MAX_ARGS);
        char **argv = calloc(argc + 1, sizeof(char *));
        if (!argv)
                return error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < argc; i++)
                if (!(argv[i] = (char *)json_string_value(json_array_get(argv_j, i)))) {
                        free(argv);
                        return error_set(err, -EINVAL, "\"argv\" must be strings");
                }
        json_int_t timeout_s = timeout_j ? json_integer_value(timeout_j) : RUNREQ_TIMEOUT_DEFAULT_S;
        json_int_t tail_max = tail_j ? json_integer_value(tail_j) : RUNREQ_TAIL_DEFAULT;
        if ((timeout_j && !json_is_integer(timeout_j)) || timeout_s < 1 ||
            timeout_s > FRAME_RUN_TIMEOUT_MAX_MS / 1000) {
                free(argv);
                return error_set(err, -EINVAL, "\"timeout_s\" must be 1-%u",
                                 FRAME_RUN_TIMEOUT_MAX_MS / 1000);
        }
        if ((tail_j && !json_is_integer(tail_j)) || tail_max < 0 || tail_max > FRAME_RUN_TAIL_MAX) {
                free(argv);
                return error_set(err, -EINVAL, "\"tail_max\" must be 0-%u", FRAME_RUN_TAIL_MAX);
        }
        *ret = (runreq_args_t){.argv = argv,
                               .argc = argc,
                               .timeout_s = (uint32_t)timeout_s,
                               .tail_max = (uint32_t)tail_max};
        return 0;
}

void runreq_args_free(runreq_args_t *a)
{
        free(a->argv);
        a->argv = NULL;
        a->argc = 0;
}

json_t *runreq_tree_argv(const char *turn, const char *cwd)
{
        return json_pack("[s, s, s, s, s]", "hangar-driver", "tree", "--turn", turn, cwd);
}

int runreq_verify_argv(const char *turn, json_t *user, json_t **ret, hg_error_t *err)
{
        if (!json_is_array(user) || json_array_size(user) == 0 ||
            json_array_size(user) > FRAME_RUN_MAX_ARGS - RUNREQ_VERIFY_PREFIX)
                return error_set(err, -EINVAL, "\"argv\" must be 1-%u strings",
                                 FRAME_RUN_MAX_ARGS - RUNREQ_VERIFY_PREFIX);
        json_t *argv_j =
            json_pack("[s, s, s, s, s]", "hangar-driver", "gate", "--turn", turn, "--");
        if (!argv_j || json_array_extend(argv_j, user) < 0) {
                json_decref(argv_j);
                return error_set(err, -ENOMEM, "out of memory");
        }
        *ret = argv_j;
        return 0;
}

json_t *runreq_tree_hash(const frame_run_result_t *rr)
{
        _cleanup_json_ json_t *tree = NULL;
        if (rr->exit.end != FRAME_END_EXITED || rr->exit.value != 0 || rr->truncated ||
            jsonx_load((const char *)rr->tail, rr->tail_len, 4, &tree, NULL) < 0 ||
            !json_is_object(tree) || !json_is_string(json_object_get(tree, "tree")))
                return NULL;
        return TAKE_PTR(tree);
}

char *runreq_failed_tail(const frame_run_result_t *rr)
{
        size_t n = rr->tail_len < RUNREQ_FAILED_TAIL_MAX ? rr->tail_len : RUNREQ_FAILED_TAIL_MAX;
        char *text = malloc(n + 1);
        if (!text)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                uint8_t b = rr->tail[i];
                text[i] = b >= 0x20 && b < 0x7f ? (char)b : b == '\n' ? ' ' : '?';
        }
        text[n] = '\0';
        return text;
}
