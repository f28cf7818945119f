/* pause: the pod sandbox's first process (scripts/build-images.sh builds it
 * with gcc -static into the registry.k8s.io/pause image for the local node).
 *
 * It holds the pod's namespaces open and does nothing else: it sleeps until
 * SIGTERM or SIGINT (exit 0) and, as the pid namespace's init, reaps every
 * child that is reparented to it so no zombie outlives its parent.
 *
 * The signals are blocked and taken with sigwaitinfo(2): a blocked signal is
 * queued even for a namespace's init, which the kernel otherwise spares
 * signals it has no handler for. Handlers are installed too, so none of them
 * is at its default disposition if the mask is ever changed.
 *
 *   pause        run
 *   pause -v     print the version and exit
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAUSE_VERSION "hangar-pause 1 (registry.k8s.io/pause:3.10.2 stand-in)"

static void on_signal(int sig)
{
        (void)sig; /* never runs while the signals are blocked */
}

static void reap_children(void)
{
        for (;;) {
                pid_t pid = waitpid(-1, NULL, WNOHANG);
                if (pid > 0)
                        continue;
                if (pid < 0 && errno == EINTR)
                        continue;
                return; /* 0: children left but none exited; ECHILD: none */
        }
}

int main(int argc, char **argv)
{
        static const int sigs[] = {SIGTERM, SIGINT, SIGCHLD};
        sigset_t set;
        struct sigaction sa;

        if (argc == 2 && strcmp(argv[1], "-v") == 0) {
                puts(PAUSE_VERSION);
                return 0;
        }
        if (argc != 1) {
                fputs("usage: pause [-v]\n", stderr);
                return 2;
        }

        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigemptyset(&set);
        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
                sigaddset(&set, sigs[i]);
                if (sigaction(sigs[i], &sa, NULL) < 0) {
                        perror("pause: sigaction");
                        return 1;
                }
        }
        if (sigprocmask(SIG_BLOCK, &set, NULL) < 0) {
                perror("pause: sigprocmask");
                return 1;
        }
        /* Children that exited before the mask was set. */
        reap_children();

        for (;;) {
                siginfo_t info;
                int sig = sigwaitinfo(&set, &info);
                if (sig < 0) {
                        if (errno == EINTR)
                                continue;
                        perror("pause: sigwaitinfo");
                        return 1;
                }
                switch (sig) {
                case SIGCHLD:
                        /* Signals of one kind coalesce: reap all of them. */
                        reap_children();
                        break;
                case SIGTERM:
                case SIGINT:
                        return 0;
                default:
                        /* Not in the set: cannot happen; ignore it, keep holding the pod. */
                        break;
                }
        }
}
