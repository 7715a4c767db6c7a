/* A FUSE file system whose file stops answering getattr once it is open: what
 * a process holding a file on a dead NFS server or a wedged FUSE daemon looks
 * like to a stat(2) through /proc/<pid>/fd. The root holds one file, "held";
 * its getattr answers until something opens it, then blocks until the daemon
 * gets a signal (SIGTERM ends its loop and unmounts). Mount it with
 * attr_timeout=0 so no answer is cached. Built by the integration tests:
 *   cc hung_getattr_fs.c $(pkg-config --cflags --libs fuse3) -o hung_getattr_fs
 *   hung_getattr_fs -f -s -o attr_timeout=0,entry_timeout=0 MOUNTPOINT
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fuse.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile int opened;

static int held_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
  (void)fi;
  memset(st, 0, sizeof *st);
  if (strcmp(path, "/") == 0) {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
    return 0;
  }
  if (strcmp(path, "/held") != 0) return -ENOENT;
  if (opened) pause(); /* until a signal: SIGTERM ends the file system */
  st->st_mode = S_IFREG | 0644;
  st->st_nlink = 1;
  st->st_size = 4096;
  return 0;
}

static int held_open(const char *path, struct fuse_file_info *fi) {
  (void)fi;
  if (strcmp(path, "/held") != 0) return -ENOENT;
  opened = 1;
  return 0;
}

static const struct fuse_operations kOperations = {
    .getattr = held_getattr,
    .open = held_open,
};

int main(int argc, char *argv[]) { return fuse_main(argc, argv, &kOperations, NULL); }
