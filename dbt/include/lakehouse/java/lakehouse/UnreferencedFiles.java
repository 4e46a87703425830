package lakehouse;

import org.apache.iceberg.Table;
import org.apache.iceberg.actions.DeleteOrphanFiles;
import org.apache.iceberg.spark.Spark3Util;
import org.apache.iceberg.spark.actions.SparkActions;

/**
 * Deletes the files under an Iceberg table's location that no snapshot references and that are
 * older than a moment, however recent. Spark's {@code remove_orphan_files} procedure refuses a
 * moment less than 24 hours ago, because a concurrent write's files are unreferenced until it
 * commits; the erasure holds the run lock, so no write is in flight, and a file a dead write
 * left may hold an erased row whatever its age.
 *
 * <p>Call it as {@code select reflect('lakehouse.UnreferencedFiles', 'delete', table,
 * cast(<epoch ms> as bigint)) from values (1)} (see DriverSession): returns how many files it
 * deleted.
 */
public final class UnreferencedFiles {
  private UnreferencedFiles() {}

  public static String delete(String table, long olderThanMillis) throws Exception {
    Table iceberg = Spark3Util.loadIcebergTable(DriverSession.get("UnreferencedFiles.delete"), table);
    DeleteOrphanFiles.Result result =
        SparkActions.get(DriverSession.get("UnreferencedFiles.delete"))
            .deleteOrphanFiles(iceberg)
            .olderThan(olderThanMillis)
            .execute();
    int count = 0;
    for (String ignored : result.orphanFileLocations()) {
      count++;
    }
    return String.valueOf(count);
  }
}
