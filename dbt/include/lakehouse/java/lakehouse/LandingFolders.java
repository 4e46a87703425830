package lakehouse;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkEnv;
import org.apache.spark.deploy.SparkHadoopUtil;

/**
 * What Spark SQL cannot see by itself: Spark's file sources hide every name that starts with
 * "_" or ".", so a batch folder's completion marker (_SUCCESS) is invisible to SQL. Called
 * from SQL with reflect('lakehouse.LandingFolders', 'isComplete', folder), on any executor,
 * through the Hadoop file system of the folder's URI (file://, hdfs://, s3a://...).
 *
 * <p>It also lists a source's batch folders changed since a time, so a scheduled run does not
 * list every folder ever landed: reflect('lakehouse.LandingFolders', 'changedFolders', root,
 * sinceMillis).
 */
public final class LandingFolders {
  public static final String MARKER = "_SUCCESS";

  private LandingFolders() {}

  /** True when the folder holds its completion marker. */
  public static boolean isComplete(String folder) throws java.io.IOException {
    Path marker = new Path(folder, MARKER);
    return marker.getFileSystem(hadoopConf()).exists(marker);
  }

  /**
   * The batch folders directly under {@code root} whose modification time is at or after
   * {@code sinceMillis}, or unknown (0: object stores keep no folder times, so every folder
   * is listed there). Adding, renaming or deleting an entry changes a folder's time on POSIX
   * file systems and HDFS, so a file renamed into an old folder, or a marker written late,
   * makes its folder listed again. One line per folder with at least one visible file
   * (a name not starting with "_" or "."): {@code name<TAB>complete(0|1)<TAB>visible files}.
   * The first line is {@code now<TAB><millis>}: this listing's start on this clock. Missing
   * root: only that line.
   */
  public static String changedFolders(String root, long sinceMillis) throws java.io.IOException {
    long now = System.currentTimeMillis();
    StringBuilder out = new StringBuilder("now\t").append(now);
    Path rootPath = new Path(root);
    FileSystem fs = rootPath.getFileSystem(hadoopConf());
    if (!fs.exists(rootPath)) {
      return out.toString();
    }
    for (FileStatus folder : fs.listStatus(rootPath)) {
      long modified = folder.getModificationTime();
      if (!folder.isDirectory() || (modified > 0 && modified < sinceMillis)) {
        continue;
      }
      boolean complete = false;
      int visible = 0;
      for (FileStatus entry : fs.listStatus(folder.getPath())) {
        String name = entry.getPath().getName();
        if (name.equals(MARKER)) {
          complete = true;
        } else if (entry.isFile() && !name.startsWith("_") && !name.startsWith(".")) {
          visible++;
        }
      }
      if (visible > 0) {
        out.append('\n').append(folder.getPath().getName()).append('\t')
            .append(complete ? 1 : 0).append('\t').append(visible);
      }
    }
    return out.toString();
  }

  /** True when the path (a landing folder) exists. */
  public static boolean exists(String path) throws java.io.IOException {
    Path folder = new Path(path);
    return folder.getFileSystem(hadoopConf()).exists(folder);
  }

  /** The session's Hadoop settings (spark.hadoop.* included), on the driver and executors. */
  private static Configuration hadoopConf() {
    SparkEnv env = SparkEnv.get();
    return env == null
        ? new Configuration()
        : SparkHadoopUtil.get().newConfiguration(env.conf());
  }
}
