/* The pod sandbox's process (the "pause" container): it holds the pod's namespaces,
 * reaps orphans, and exits on SIGINT or SIGTERM. Built static by scripts/k8s/up.sh with
 * gcc, so the sandbox image is one file and nothing is pulled from a registry. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig) { (void)sig; _exit(0); }

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, 0, WNOHANG) > 0) {
  }
}

int main(void) {
  signal(SIGINT, quit);
  signal(SIGTERM, quit);
  signal(SIGCHLD, reap);
  for (;;) pause();
}
