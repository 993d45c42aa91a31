/* The pause container of every Pod sandbox on the test node (scripts/node.sh): holds the Pod's
 * namespaces, reaps orphans, exits on SIGINT or SIGTERM. Built static, so its image is one file. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void die(int s) { (void)s; _exit(0); }
static void reap(int s) { (void)s; while (waitpid(-1, NULL, WNOHANG) > 0) {} }
int main(void) {
  struct sigaction a = {0}; a.sa_handler = die;
  sigaction(SIGINT, &a, NULL); sigaction(SIGTERM, &a, NULL);
  struct sigaction c = {0}; c.sa_handler = reap; c.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &c, NULL);
  for (;;) pause();
}
