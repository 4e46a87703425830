package lakehouse;

import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.Table;
import org.apache.iceberg.spark.Spark3Util;

/**
 * Records a property in an Iceberg table's snapshot summary, which Spark 3.5 SQL cannot do
 * (Iceberg reads extra summary properties from DataFrame write options or a thread-local only;
 * SQL write options arrive with Spark 4.0). It commits an empty append whose summary carries
 * the property, e.g. lakehouse.complete-through.
 *
 * <p>Call it as {@code select reflect('lakehouse.SnapshotSummary', 'stamp', table, key, value)
 * from values (1)} (see DriverSession).
 */
public final class SnapshotSummary {
  private SnapshotSummary() {}

  /** Returns the id of the snapshot carrying key=value (a new one unless the table's current
   * snapshot already carries it: evaluating the call twice commits once). */
  public static String stamp(String table, String key, String value) throws Exception {
    return stamp(table, key, value, SnapshotRef.MAIN_BRANCH);
  }

  /** The same on `branch` (a write-audit-publish run's branch, created from main when the
   * table has none yet). */
  public static String stamp(String table, String key, String value, String branch)
      throws Exception {
    Table iceberg = Spark3Util.loadIcebergTable(DriverSession.get("SnapshotSummary.stamp"), table);
    Snapshot current = head(iceberg, branch);
    if (current == null || !value.equals(current.summary().get(key))) {
      AppendFiles append = iceberg.newAppend().set(key, value);
      if (!SnapshotRef.MAIN_BRANCH.equals(branch)) {
        append.toBranch(branch);
      }
      append.commit();
    }
    return String.valueOf(head(iceberg, branch).snapshotId());
  }

  /**
   * Stamps key=value on `branch` unless the newest stamp of `key` on its lineage (as {@link
   * TableState#stamped} reads it) already says `value`: one call where a read and a stamp took
   * two. Returns the id of the new snapshot carrying it, or {@code unchanged}.
   */
  public static String stampIfMoved(String table, String key, String value, String branch)
      throws Exception {
    String stamped = TableState.stamped(table, key, branch);
    if (!stamped.isEmpty() && value.equals(stamped.split("\t", -1)[0])) {
      return "unchanged";
    }
    return stamp(table, key, value, branch);
  }

  /**
   * Stamps on `table` the lowest of `known` (values already read, separated by {@code |}, or
   * empty) and of the newest `key` stamp of each table in `upstreams` (comma separated, read
   * as {@link TableState#stamped} reads them on `branch`), unless it already says that: a
   * model whose watermark is the oldest of its upstreams' in one call. Returns {@code
   * <value>\t<id of the new snapshot, or unchanged>}, or an empty string when an upstream has
   * no stamp (nothing is stamped: the model is not complete through any time yet).
   */
  public static String stampLowest(
      String table, String key, String known, String upstreams, String branch) throws Exception {
    String lowest = null;
    List<String> candidates = new ArrayList<>();
    for (String value : known.split("\\|")) {
      if (!value.isEmpty()) {
        candidates.add(value);
      }
    }
    for (String upstream : upstreams.split(",")) {
      if (upstream.isEmpty()) {
        continue;
      }
      String stamped = TableState.stamped(upstream, key, branch);
      if (stamped.isEmpty()) {
        return "";
      }
      candidates.add(stamped.split("\t", -1)[0]);
    }
    for (String value : candidates) {
      lowest = lowest == null || value.compareTo(lowest) < 0 ? value : lowest;
    }
    if (lowest == null) {
      return "";
    }
    return lowest + "\t" + stampIfMoved(table, key, lowest, branch);
  }

  private static Snapshot head(Table table, String branch) {
    SnapshotRef ref = table.refs().get(branch);
    return ref == null ? table.currentSnapshot() : table.snapshot(ref.snapshotId());
  }
}
