package lakehouse;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkEnv;
import org.apache.spark.deploy.SparkHadoopUtil;

/**
 * What Spark SQL cannot see by itself: Spark's file sources hide every name that starts with
 * "_" or ".", so a batch folder's completion marker (_SUCCESS) is invisible to SQL. Called
 * from SQL with reflect('lakehouse.LandingFolders', 'isComplete', folder), on any executor,
 * through the Hadoop file system of the folder's URI (file://, hdfs://, s3a://...).
 */
public final class LandingFolders {
  public static final String MARKER = "_SUCCESS";

  private LandingFolders() {}

  /** True when the folder holds its completion marker. */
  public static boolean isComplete(String folder) throws java.io.IOException {
    Path marker = new Path(folder, MARKER);
    return marker.getFileSystem(hadoopConf()).exists(marker);
  }

  /** The session's Hadoop settings (spark.hadoop.* included), on the driver and executors. */
  private static Configuration hadoopConf() {
    SparkEnv env = SparkEnv.get();
    return env == null
        ? new Configuration()
        : SparkHadoopUtil.get().newConfiguration(env.conf());
  }
}
