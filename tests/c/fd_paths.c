// Every way a descriptor of /dev/kfd or a render node is duplicated or passed names the same
// file, as in the kernel (issue #34): dup, dup2, dup3, fcntl(F_DUPFD, F_DUPFD_CLOEXEC), a
// descriptor received through SCM_RIGHTS, a reopen through /proc/self/fd (a new open of the
// device), fork (the child's kfd descriptor is EBADF, as amdkfd answers a process that did not
// open it), close_range. Closing one duplicate leaves the file open for the others; the file
// goes with the last one.
//
// The render file's identity is observable through AMDKFD_IOC_ACQUIRE_VM: once a GPU's VM is
// acquired from one render file, the same file again answers 0, another file of that GPU EBUSY.
//
// Prints one PASS/FAIL line per check and ends with "N passed, M failed".
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/kfd_ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

static int passed, failed;

static void check(int ok, const char *what, const char *detail) {
  printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what, detail[0] ? ": " : "", detail);
  if (ok)
    passed++;
  else
    failed++;
}

// errno of a call that returned -1, 0 for success.
static int err_of(int r) { return r < 0 ? errno : 0; }

static unsigned gpu_id(void) {
  FILE *f = fopen("/sys/class/kfd/kfd/topology/nodes/1/gpu_id", "r");
  unsigned id = 0;
  if (!f || fscanf(f, "%u", &id) != 1)
    id = 0;
  if (f)
    fclose(f);
  return id;
}

static int acquire_vm(int kfd, int drm_fd, unsigned gpu) {
  struct kfd_ioctl_acquire_vm_args a = {.drm_fd = (__u32)drm_fd, .gpu_id = gpu};
  return err_of(ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &a));
}

static int get_version(int kfd) {
  struct kfd_ioctl_get_version_args v = {0};
  int e = err_of(ioctl(kfd, AMDKFD_IOC_GET_VERSION, &v));
  return e ? e : (v.major_version == 1 ? 0 : -1);
}

static int send_fd(int sock, int fd) {
  char byte = 'x';
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  memset(&u, 0, sizeof u);
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof(int));
  return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock) {
  char byte;
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
  if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != 1)
    return -1;
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  if (!c || c->cmsg_type != SCM_RIGHTS)
    return -1;
  int fd;
  memcpy(&fd, CMSG_DATA(c), sizeof(int));
  return fd;
}

int main(void) {
  char d[256];
  unsigned gpu = gpu_id();
  int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
  int render = open("/dev/dri/renderD128", O_RDWR | O_CLOEXEC);
  snprintf(d, sizeof d, "kfd %d, renderD128 %d, gpu_id %u", kfd, render, gpu);
  check(kfd >= 0 && render >= 0 && gpu != 0, "open /dev/kfd and renderD128", d);
  if (kfd < 0 || render < 0 || gpu == 0)
    goto out;

  // --- /dev/kfd through duplicates ---
  int kdup = dup(kfd);
  int kdup2 = dup2(kfd, 200);
  int kdup3 = dup3(kfd, 201, O_CLOEXEC);
  int kf = fcntl(kfd, F_DUPFD, 100);
  int kfc = fcntl(kfd, F_DUPFD_CLOEXEC, 100);
  snprintf(d, sizeof d, "dup %d, dup2 %d, dup3 %d, F_DUPFD %d, F_DUPFD_CLOEXEC %d", get_version(kdup),
           get_version(kdup2), get_version(kdup3), get_version(kf), get_version(kfc));
  check(kdup2 == 200 && kdup3 == 201 && !get_version(kdup) && !get_version(kdup2) && !get_version(kdup3) &&
            !get_version(kf) && !get_version(kfc),
        "GET_VERSION through every duplicate of /dev/kfd", d);
  close(kdup);
  close(kdup2);
  close(kdup3);
  close(kf);
  check(!get_version(kfd) && !get_version(kfc), "closing duplicates leaves /dev/kfd open for the others", "");

  // --- the render file: the VM is acquired through a duplicate (libhsakmt 6.x) ---
  int rdup = fcntl(render, F_DUPFD_CLOEXEC, 0);
  int e = acquire_vm(kfd, rdup, gpu);
  snprintf(d, sizeof d, "errno %d", e);
  check(e == 0, "ACQUIRE_VM with an F_DUPFD_CLOEXEC duplicate of the render descriptor", d);
  int rd = dup(render), rd2 = dup2(render, 202), rd3 = dup3(render, 203, O_CLOEXEC), rf = fcntl(render, F_DUPFD, 0);
  snprintf(d, sizeof d, "orig %d, dup %d, dup2 %d, dup3 %d, F_DUPFD %d", acquire_vm(kfd, render, gpu),
           acquire_vm(kfd, rd, gpu), acquire_vm(kfd, rd2, gpu), acquire_vm(kfd, rd3, gpu), acquire_vm(kfd, rf, gpu));
  check(!acquire_vm(kfd, render, gpu) && !acquire_vm(kfd, rd, gpu) && !acquire_vm(kfd, rd2, gpu) &&
            !acquire_vm(kfd, rd3, gpu) && !acquire_vm(kfd, rf, gpu),
        "every duplicate names the file the VM came from (0, not EBUSY)", d);

  struct stat st;
  int fe = err_of(fstat(rd3, &st));
  snprintf(d, sizeof d, "errno %d, rdev %u:%u, mode %o", fe, major(st.st_rdev), minor(st.st_rdev), st.st_mode);
  check(!fe && S_ISCHR(st.st_mode) && major(st.st_rdev) == 226 && minor(st.st_rdev) == 128,
        "fstat of a duplicate is the render node", d);

  // Closing the descriptor the file was opened with leaves it open for its duplicates.
  close(render);
  close(rd);
  close(rd2);
  close(rf);
  e = acquire_vm(kfd, rd3, gpu);
  snprintf(d, sizeof d, "errno %d", e);
  check(e == 0, "the render file outlives the descriptor it was opened with", d);

  // --- SCM_RIGHTS within the process ---
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 && send_fd(sv[0], rd3) == 0 && send_fd(sv[0], kfc) == 0) {
    int rr = recv_fd(sv[1]);
    int kr = recv_fd(sv[1]);
    e = acquire_vm(kfd, rr, gpu);
    snprintf(d, sizeof d, "render %d: errno %d; kfd %d: GET_VERSION %d", rr, e, kr, get_version(kr));
    check(rr >= 0 && e == 0 && kr >= 0 && !get_version(kr),
          "descriptors received through SCM_RIGHTS name the same files", d);
    close(rr);
    close(kr);
  } else {
    check(0, "descriptors received through SCM_RIGHTS", strerror(errno));
  }

  // --- /proc/self/fd reopen: a new open of the device ---
  char link[64], target[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", rd3);
  ssize_t n = readlink(link, target, sizeof target - 1);
  target[n > 0 ? n : 0] = 0;
  check(strcmp(target, "/dev/dri/renderD128") == 0, "readlink of a render descriptor's procfs link", target);
  int reopened = open(link, O_RDWR | O_CLOEXEC);
  e = acquire_vm(kfd, reopened, gpu);
  snprintf(d, sizeof d, "fd %d, errno %d", reopened, e);
  check(reopened >= 0 && e == EBUSY, "reopening /proc/self/fd/N opens a new render file (ACQUIRE_VM: EBUSY)", d);
  close(reopened);
  snprintf(link, sizeof link, "/dev/fd/%d", kfc);
  int kre = open(link, O_RDWR);
  snprintf(d, sizeof d, "fd %d, GET_VERSION %d", kre, get_version(kre));
  check(kre >= 0 && !get_version(kre), "reopening /dev/fd/N of /dev/kfd opens /dev/kfd again", d);
  close(kre);

  // --- fork: the child's kfd descriptor is not its process's ---
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    struct kfd_ioctl_get_version_args v = {0};
    int r = ioctl(kfd, AMDKFD_IOC_GET_VERSION, &v);
    _exit(r < 0 && errno == EBADF ? 0 : 1);
  }
  int status = -1;
  waitpid(child, &status, 0);
  snprintf(d, sizeof d, "child status %d", status);
  check(child > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "a forked child's ioctl on /dev/kfd is EBADF", d);
  check(!get_version(kfd), "the parent's /dev/kfd works after fork", "");

  // --- the last descriptor closes the file; close_range forgets numbers the shim had ---
  close(rd3);
  close(rdup);
  int fresh = open("/dev/dri/renderD128", O_RDWR | O_CLOEXEC);
  e = acquire_vm(kfd, fresh, gpu);
  snprintf(d, sizeof d, "errno %d", e);
  check(e == EBUSY, "a new open of the render node is another file (ACQUIRE_VM: EBUSY)", d);
  close(fresh);
  int spare = dup2(kfc, 300);
  close_range(300, 300, 0);
  int devnull = open("/dev/null", O_RDONLY);
  int moved = dup2(devnull, 300);
  struct kfd_ioctl_get_version_args v = {0};
  e = err_of(ioctl(moved, AMDKFD_IOC_GET_VERSION, &v));
  snprintf(d, sizeof d, "spare %d, moved %d, errno %d", spare, moved, e);
  check(spare == 300 && moved == 300 && e == ENOTTY,
        "a number freed by close_range is no longer the shim's (ioctl on /dev/null: ENOTTY)", d);
  close(moved);
  close(devnull);
  close(kfc);

out:
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
