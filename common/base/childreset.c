#include "childreset.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

void child_reset(pid_t parent)
{
        (void)setpgid(0, 0);
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) /* the parent died before PDEATHSIG was armed */
                _exit(127);
        for (int sig = 1; sig < NSIG; sig++)
                (void)signal(sig, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        (void)sigprocmask(SIG_SETMASK, &none, NULL);
}
