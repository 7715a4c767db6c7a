/* A FUSE file system whose statfs never answers: what a dead NFS server or a
 * wedged FUSE daemon looks like to statvfs(2). An empty root directory, every
 * lookup ENOENT, and statfs blocks until the daemon gets a signal: SIGTERM
 * (libfuse's handler ends its loop) answers EIO and unmounts. Built by the
 * integration tests:
 *   cc hung_statfs_fs.c $(pkg-config --cflags --libs fuse3) -o hung_statfs_fs
 *   hung_statfs_fs -f -s MOUNTPOINT   (as root, in a private mount namespace)
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fuse.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int hung_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
  (void)fi;
  memset(st, 0, sizeof *st);
  if (strcmp(path, "/") != 0) return -ENOENT;
  st->st_mode = S_IFDIR | 0755;
  st->st_nlink = 2;
  return 0;
}

static int hung_statfs(const char *path, struct statvfs *st) {
  (void)path;
  (void)st;
  pause(); /* until a signal: SIGTERM ends the file system */
  return -EIO;
}

static const struct fuse_operations kOperations = {
    .getattr = hung_getattr,
    .statfs = hung_statfs,
};

int main(int argc, char *argv[]) { return fuse_main(argc, argv, &kOperations, NULL); }
