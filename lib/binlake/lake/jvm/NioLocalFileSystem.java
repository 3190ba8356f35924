package binlake.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system (checksummed, as {@code file:} paths get by default) whose
 * {@code setPermission} calls the JDK instead of running {@code chmod}.
 *
 * <p>Without Hadoop's native library (pyspark ships none), {@code RawLocalFileSystem} starts a
 * {@code chmod} process for every file it creates and every directory it makes with a
 * permission: every manifest, manifest list and metadata file of an Iceberg commit, and the
 * checksum file of each.  From a JVM of a few GB that is a fork and an exec, milliseconds
 * each, several per commit.  Here the same bits (the permission after Hadoop applied the
 * umask) are set with {@code Files.setPosixFilePermissions}; a file system without POSIX
 * permissions falls back to Hadoop's way.
 */
public class NioLocalFileSystem extends LocalFileSystem {
  public NioLocalFileSystem() {
    super(new Raw());
  }

  /** {@code RawLocalFileSystem}, its {@code setPermission} through the JDK. */
  public static class Raw extends RawLocalFileSystem {
    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
      add(set, permission.getUserAction(), PosixFilePermission.OWNER_READ,
          PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE);
      add(set, permission.getGroupAction(), PosixFilePermission.GROUP_READ,
          PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE);
      add(set, permission.getOtherAction(), PosixFilePermission.OTHERS_READ,
          PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);
      if (permission.getStickyBit()) {  // (no JDK call sets it: Hadoop's way)
        super.setPermission(p, permission);
        return;
      }
      try {
        Files.setPosixFilePermissions(pathToFile(p).toPath(), set);
      } catch (UnsupportedOperationException e) {
        super.setPermission(p, permission);
      }
    }

    private static void add(Set<PosixFilePermission> set, FsAction action,
                            PosixFilePermission read, PosixFilePermission write,
                            PosixFilePermission execute) {
      if (action.implies(FsAction.READ)) {
        set.add(read);
      }
      if (action.implies(FsAction.WRITE)) {
        set.add(write);
      }
      if (action.implies(FsAction.EXECUTE)) {
        set.add(execute);
      }
    }
  }
}
