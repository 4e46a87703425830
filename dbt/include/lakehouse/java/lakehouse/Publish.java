package lakehouse;

import java.util.Map;
import org.apache.iceberg.ManageSnapshots;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.Table;
import org.apache.iceberg.spark.Spark3Util;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * Publishes a write-audit-publish run on one table in one Iceberg commit: main fast-forwarded
 * to the run's branch, the run's and the day's tags on the published snapshot, the branch
 * dropped (and branches of red runs past their retention). Spark SQL needs a statement and a
 * metadata commit for each of these (five per table); one commit also means a reader never
 * sees main published without its tags.
 *
 * <p>Call it as {@code select reflect('lakehouse.Publish', 'publish', table, branch, runTag,
 * runTagRetainMs, dayTag, dayTagRetainMs, staleBranches) from values (1)} (see DriverSession).
 * It answers {@code untouched} (the table has no such branch: the run did not write it),
 * {@code moved <main snapshot id>} (main is no longer an ancestor of the branch: a commit
 * outside the run lock; nothing was committed) or {@code published <snapshot id>}.
 */
public final class Publish {
  private Publish() {}

  public static String publish(
      String table,
      String branch,
      String runTag,
      long runTagRetainMs,
      String dayTag,
      long dayTagRetainMs,
      String staleBranches)
      throws Exception {
    Table iceberg = Spark3Util.loadIcebergTable(DriverSession.get("Publish.publish"), table);
    Map<String, SnapshotRef> refs = iceberg.refs();
    SnapshotRef head = refs.get(branch);
    if (head == null || !head.isBranch()) {
      return "untouched";
    }
    long published = head.snapshotId();
    SnapshotRef main = refs.get(SnapshotRef.MAIN_BRANCH);
    if (main != null && !SnapshotUtil.isAncestorOf(iceberg, published, main.snapshotId())) {
      return "moved " + main.snapshotId();
    }
    // a table created inside the run has no main yet: the fast-forward creates it
    ManageSnapshots update = iceberg.manageSnapshots().fastForwardBranch(SnapshotRef.MAIN_BRANCH, branch);
    tag(update, refs, runTag, published, runTagRetainMs);
    tag(update, refs, dayTag, published, dayTagRetainMs);
    update.removeBranch(branch);
    for (String stale : staleBranches.split(",")) {
      SnapshotRef ref = refs.get(stale.trim());
      if (ref != null && ref.isBranch() && !stale.trim().equals(branch)) {
        update.removeBranch(stale.trim());
      }
    }
    update.commit();
    return "published " + published;
  }

  /**
   * {@link #publish} for each of {@code tables} (comma-separated, upstream first) in one call:
   * a run's publish was a statement per table. One line per table it got to, {@code <table>
   * <answer>}; it stops after the first table whose main moved ({@code moved ...}) or whose
   * publish failed ({@code failed <error>}, nothing committed on that table), so no table is
   * published after one of its inputs was not.
   */
  public static String publishAll(
      String tables,
      String branch,
      String runTag,
      long runTagRetainMs,
      String dayTag,
      long dayTagRetainMs,
      String staleBranches) {
    StringBuilder answers = new StringBuilder();
    for (String table : tables.split(",")) {
      String answer;
      try {
        answer = publish(table, branch, runTag, runTagRetainMs, dayTag, dayTagRetainMs, staleBranches);
      } catch (Exception error) {
        String message = String.valueOf(error.getMessage()).replaceAll("\\s+", " ");
        answer = "failed " + error.getClass().getSimpleName() + ": " + message;
      }
      answers.append(table).append(' ').append(answer).append('\n');
      if (!answer.startsWith("published") && !answer.equals("untouched")) {
        break;
      }
    }
    return answers.toString();
  }

  private static void tag(
      ManageSnapshots update, Map<String, SnapshotRef> refs, String name, long snapshotId, long retainMs) {
    SnapshotRef existing = refs.get(name);
    if (existing == null) {
      update.createTag(name, snapshotId);
    } else if (existing.isTag()) {
      update.replaceTag(name, snapshotId);
    } else {
      throw new IllegalArgumentException("cannot tag " + name + ": a branch has that name");
    }
    update.setMaxRefAgeMs(name, retainMs);
  }
}
