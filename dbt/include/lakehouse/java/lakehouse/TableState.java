package lakehouse;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.Table;
import org.apache.iceberg.spark.Spark3Util;

/**
 * What the per-model macros read of an Iceberg table, one call each instead of a statement per
 * metadata table: Spark SQL answers a table's properties (`show tblproperties`), its snapshot
 * log (`.snapshots`) and its refs (`.refs`) each with a statement of its own, and every
 * statement loads the table again. Run after every model of a scheduled build, these were a
 * tenth of its statements.
 *
 * <p>Call them as {@code select reflect('lakehouse.TableState', 'summary', table) from values
 * (1)} (see DriverSession).
 */
public final class TableState {
  private TableState() {}

  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * The maintenance decision's cheap read, as JSON: {@code properties} (the table's own, plus
   * {@code current-snapshot-id} of main as `show tblproperties` lists it, "none" before the
   * first commit), {@code now_ms} (the driver's clock) and {@code snapshots}: per snapshot its
   * commit time, operation, the summary's added-data-files, changed-partition-count and
   * replace-partitions, and for main's current snapshot its total-* counters.
   */
  public static String summary(String table) throws Exception {
    Table iceberg = Spark3Util.loadIcebergTable(DriverSession.get("TableState.summary"), table);
    Snapshot current = iceberg.currentSnapshot();
    Map<String, String> properties = new LinkedHashMap<>(iceberg.properties());
    properties.put("current-snapshot-id", current == null ? "none" : String.valueOf(current.snapshotId()));
    List<Map<String, Object>> snapshots = new ArrayList<>();
    for (Snapshot snapshot : iceberg.snapshots()) {
      Map<String, String> summary = snapshot.summary();
      Map<String, Object> row = new LinkedHashMap<>();
      row.put("committed_ms", snapshot.timestampMillis());
      row.put("operation", snapshot.operation());
      row.put("added_data_files", number(summary.get("added-data-files")));
      row.put("changed_partition_count", number(summary.get("changed-partition-count")));
      row.put("replace_partitions", "true".equals(summary.get("replace-partitions")));
      if (current != null && snapshot.snapshotId() == current.snapshotId()) {
        for (String counter : COUNTERS) {
          row.put(counter.replace('-', '_'), number(summary.get(counter)));
        }
      }
      snapshots.add(row);
    }
    Map<String, Object> state = new LinkedHashMap<>();
    state.put("properties", properties);
    state.put("now_ms", System.currentTimeMillis());
    state.put("snapshots", snapshots);
    return JSON.writeValueAsString(state);
  }

  /**
   * {@link #summary} of each of {@code tables} (comma-separated) in one call, as one JSON
   * object by table name: a run that maintains every table it published read them with a
   * statement each. A table that cannot be read gets {@code {"error": <message>}} and the
   * others are still read.
   */
  public static String summaries(String tables) throws Exception {
    Map<String, Object> states = new LinkedHashMap<>();
    for (String table : tables.split(",")) {
      String name = table.trim();
      try {
        states.put(name, JSON.readTree(summary(name)));
      } catch (Exception error) {
        Map<String, String> failed = new LinkedHashMap<>();
        failed.put("error", error.getClass().getSimpleName() + ": " + error.getMessage());
        states.put(name, failed);
      }
    }
    return JSON.writeValueAsString(states);
  }

  /**
   * Makes a table ready for a write-audit-publish run's writes: `write.wap.enabled` set (a
   * table built before write-audit-publish: without it Iceberg would write main) and, when the
   * table has a snapshot, the run's branch created from main before the first write (Iceberg
   * 1.10.2 starts the summary totals of a snapshot that creates its branch from zero, and
   * maintenance decides on those totals). Answers what it did: {@code wap-enabled} and/or
   * {@code branch-created}, space-separated, or {@code ready}.
   */
  public static String prepareBranch(String table, String branch) throws Exception {
    Table iceberg = Spark3Util.loadIcebergTable(DriverSession.get("TableState.prepareBranch"), table);
    List<String> done = new ArrayList<>();
    if (!"true".equalsIgnoreCase(iceberg.properties().get("write.wap.enabled"))) {
      iceberg.updateProperties().set("write.wap.enabled", "true").commit();
      done.add("wap-enabled");
    }
    Snapshot current = iceberg.currentSnapshot();
    if (current != null && !iceberg.refs().containsKey(branch)) {
      try {
        iceberg.manageSnapshots().createBranch(branch, current.snapshotId()).commit();
        done.add("branch-created");
      } catch (IllegalArgumentException exists) {
        // another writer of the same run created it between the read and the commit
        iceberg.refresh();
        if (!iceberg.refs().containsKey(branch)) {
          throw exists;
        }
      }
    }
    return done.isEmpty() ? "ready" : String.join(" ", done);
  }

  /**
   * The newest snapshot stamped with {@code key} (the completeness watermark) on the lineage
   * of {@code branch} when the table has that branch, else of main: {@code
   * <value>\t<snapshot id>\t<commit time, UTC>}, or an empty string (no stamp on it). A
   * rolled-back or unpublished snapshot is not on the lineage, so it does not count.
   */
  public static String stamped(String table, String key, String branch) throws Exception {
    Table iceberg = Spark3Util.loadIcebergTable(DriverSession.get("TableState.stamped"), table);
    SnapshotRef head = iceberg.refs().get(branch);
    if (head == null || !head.isBranch()) {
      head = iceberg.refs().get(SnapshotRef.MAIN_BRANCH);
    }
    Snapshot snapshot = head == null ? null : iceberg.snapshot(head.snapshotId());
    while (snapshot != null) {
      String value = snapshot.summary().get(key);
      if (value != null) {
        String committed = COMMIT_TIME.format(Instant.ofEpochMilli(snapshot.timestampMillis()));
        return value + "\t" + snapshot.snapshotId() + "\t" + committed;
      }
      snapshot = snapshot.parentId() == null ? null : iceberg.snapshot(snapshot.parentId());
    }
    return "";
  }

  /**
   * How a table's head (of {@code branch} when the table has it, else of main) relates to a
   * snapshot an incremental reader read last (a dimension's changelog, macros/dimensions/):
   * {@code <head id>\t<relation>}, the head id {@code none} for a table without a snapshot;
   * the relation one of {@code same}; {@code ancestor} (the head descends from it through
   * commits none of which carries {@code rebuiltKey}); {@code rebuilt} (it descends through a
   * snapshot stamped with {@code rebuiltKey}, or not at all: a {@code create or replace}); or
   * {@code missing} (an empty {@code snapshotId}, or a snapshot no longer in the table's
   * history).
   */
  public static String since(String table, String snapshotId, String branch, String rebuiltKey)
      throws Exception {
    Table iceberg = Spark3Util.loadIcebergTable(DriverSession.get("TableState.since"), table);
    SnapshotRef ref = iceberg.refs().get(branch);
    if (ref == null || !ref.isBranch()) {
      ref = iceberg.refs().get(SnapshotRef.MAIN_BRANCH);
    }
    Snapshot head = ref == null ? null : iceberg.snapshot(ref.snapshotId());
    String id = head == null ? "none" : String.valueOf(head.snapshotId());
    if (snapshotId == null || snapshotId.trim().isEmpty()) {
      return id + "\tmissing";
    }
    long last = Long.parseLong(snapshotId.trim());
    if (iceberg.snapshot(last) == null) {
      return id + "\tmissing";
    }
    Snapshot snapshot = head;
    while (snapshot != null && snapshot.snapshotId() != last) {
      if (snapshot.summary().get(rebuiltKey) != null) {
        return id + "\trebuilt";
      }
      snapshot = snapshot.parentId() == null ? null : iceberg.snapshot(snapshot.parentId());
    }
    if (snapshot == null) {
      return id + "\trebuilt";
    }
    return id + (snapshot == head ? "\tsame" : "\tancestor");
  }

  /**
   * A changelog's base in one call: the newest {@code key} stamp on {@code changelog} (as
   * {@link #stamped} reads it: {@code snapshot=<id>,checked=<load>,seq=<n>}) and how {@code
   * state}'s head relates to the snapshot it names (as {@link #since} answers): {@code
   * <stamp value>\t<head id>\t<relation>}, the stamp value empty when there is none.
   */
  public static String sinceStamped(
      String changelog, String key, String state, String branch, String rebuiltKey)
      throws Exception {
    String stamped = stamped(changelog, key, branch);
    String value = stamped.isEmpty() ? "" : stamped.split("\t", -1)[0];
    String snapshotId = "";
    for (String pair : value.split(",")) {
      if (pair.startsWith("snapshot=")) {
        snapshotId = pair.substring("snapshot=".length());
      }
    }
    return value + "\t" + since(state, snapshotId, branch, rebuiltKey);
  }

  /**
   * Points the branch {@code name} at {@code snapshotId} (created, or moved there). A reader
   * of an older snapshot names it by such a branch: inside a write-audit-publish run Iceberg
   * reads the run's branch, and refuses {@code version as of <snapshot id>} beside it, but a
   * branch named in the query wins. A branch head is also kept by snapshot expiry.
   */
  public static String pinBranch(String table, String name, String snapshotId) throws Exception {
    Table iceberg = Spark3Util.loadIcebergTable(DriverSession.get("TableState.pinBranch"), table);
    long snapshot = Long.parseLong(snapshotId.trim());
    SnapshotRef ref = iceberg.refs().get(name);
    if (ref == null) {
      iceberg.manageSnapshots().createBranch(name, snapshot).commit();
    } else if (ref.snapshotId() != snapshot) {
      iceberg.manageSnapshots().replaceBranch(name, snapshot).commit();
    }
    return name + "=" + snapshot;
  }

  private static final DateTimeFormatter COMMIT_TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS").withZone(ZoneOffset.UTC);

  private static final String[] COUNTERS = {
    "total-data-files", "total-delete-files", "total-position-deletes",
    "total-equality-deletes", "total-records", "total-files-size"
  };

  private static Long number(String value) {
    if (value == null) {
      return null;
    }
    try {
      return Long.parseLong(value.trim());
    } catch (NumberFormatException e) {
      return null;
    }
  }
}
