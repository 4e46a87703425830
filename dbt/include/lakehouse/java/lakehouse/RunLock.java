package lakehouse;

import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.OverwriteFiles;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.spark.Spark3Util;
import org.apache.iceberg.types.Types;

/**
 * The run lock's writes through Iceberg's API: one row of a one-row table replaced in one
 * commit, with Spark's serializable isolation (the commit is validated against the snapshot
 * the decision read, so of two runs racing for a free lock exactly one commits). Spark SQL
 * needed a MERGE for this, two jobs and about two seconds a run; this reads and writes one
 * small file. The table (ops.run_lock) stays an ordinary Iceberg table that SQL reads.
 *
 * <p>Call it as {@code select reflect('lakehouse.RunLock', 'acquire', table, invocation,
 * ttlMinutes) from values (1)} (see DriverSession). Each method answers the lock's state
 * after it as JSON: {@code {"missing": true}} when the table does not exist yet, else
 * holder, holder_process, load_id, acquired_at and expires_at (UTC), and for acquire
 * {@code taken_over}: the holder this call took the lock from (its process gone or its lease
 * ended), or null, and {@code lost_race}: whether another run's commit came first.
 */
public final class RunLock {
  private static final String LOCK_NAME = "warehouse";
  private static final int RELEASE_ATTEMPTS = 10;
  private static final DateTimeFormatter UTC_TEXT =
      DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSS");

  private RunLock() {}

  /** Takes the lock for {@code invocation} if it is free, its lease ended or its holder's
   * process is gone from this host; hands out the next load id. */
  public static String acquire(String table, String invocation, long ttlMinutes)
      throws Exception {
    Table iceberg = load(table);
    if (iceberg == null) {
      return "{\"missing\": true}";
    }
    Held before = Held.read(iceberg, table);
    String why = before.takeOverReason();
    String takenOver = "null";
    boolean lostRace = false;
    if (before.holder == null || why != null) {
      Instant now = Instant.now().truncatedTo(ChronoUnit.MICROS);
      Held taken =
          before.with(
              invocation,
              RunProcess.id(),
              before.loadId + 1,
              now,
              now.plus(ttlMinutes, ChronoUnit.MINUTES));
      boolean committed = replace(iceberg, before, taken);
      lostRace = !committed;
      if (committed && before.holder != null) {
        takenOver =
            String.format(
                "{\"holder\": %s, \"load_id\": %d, \"acquired_at\": %s, \"why\": %s}",
                quote(before.holder), before.loadId, quote(text(before.acquiredAt)), quote(why));
      }
    }
    Held after = Held.read(load(table), table);
    return after.json("\"taken_over\": " + takenOver + ", \"lost_race\": " + lostRace);
  }

  /** Ends {@code owner}'s hold (its lease ends now); nothing when another run holds it. */
  public static String release(String table, String owner) throws Exception {
    Table iceberg = load(table);
    if (iceberg == null) {
      return "{\"missing\": true}";
    }
    for (int attempt = 0; attempt < RELEASE_ATTEMPTS; attempt++) {
      Held held = Held.read(iceberg, table);
      if (!owner.equals(held.holder)) {
        return held.json("\"released\": false");
      }
      Instant now = Instant.now().truncatedTo(ChronoUnit.MICROS);
      Held freed = held.with(null, held.holderProcess, held.loadId, held.acquiredAt, now);
      if (replace(iceberg, held, freed)) {
        return Held.read(load(table), table).json("\"released\": true");
      }
      iceberg.refresh(); // another writer committed in between: decide again on its row
    }
    throw new IllegalStateException(
        "run lock: " + table + " changed under every one of " + RELEASE_ATTEMPTS + " releases");
  }

  /** The lock's state, read once. */
  public static String state(String table) throws Exception {
    Table iceberg = load(table);
    return iceberg == null ? "{\"missing\": true}" : Held.read(iceberg, table).json(null);
  }

  private static Table load(String table) throws Exception {
    try {
      Table iceberg = Spark3Util.loadIcebergTable(DriverSession.get("RunLock"), table);
      iceberg.refresh(); // a catalog may cache the table: another process may have committed
      return iceberg;
    } catch (org.apache.spark.sql.catalyst.analysis.NoSuchTableException
        | org.apache.iceberg.exceptions.NoSuchTableException missing) {
      return null;
    }
  }

  /** Replaces the row {@code before} read with {@code after} in one commit validated against
   * the snapshot it was read from: false when another commit came first (nothing changed). */
  private static boolean replace(Table table, Held before, Held after) throws Exception {
    DataFile written =
        DataFileWriter.write(table, "run-lock", Collections.singletonList(after.record(table)));
    OverwriteFiles overwrite = table.newOverwrite();
    for (DataFile file : before.files) {
      overwrite.deleteFile(file);
    }
    try {
      overwrite
          .addFile(written)
          .validateFromSnapshot(before.snapshotId)
          .conflictDetectionFilter(Expressions.alwaysTrue())
          .validateNoConflictingData()
          .validateNoConflictingDeletes()
          .commit();
      return true;
    } catch (ValidationException | CommitFailedException lost) {
      table.io().deleteFile(written.location());
      return false;
    }
  }

  private static String text(Instant instant) {
    return instant == null ? null : UTC_TEXT.format(instant.atOffset(ZoneOffset.UTC));
  }

  private static String quote(String value) {
    if (value == null) {
      return "null";
    }
    return "\"" + value.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  /** The lock's one row, with the snapshot and the files it was read from. */
  private static final class Held {
    final long snapshotId;
    final List<DataFile> files;
    final String holder;
    final String holderProcess;
    final long loadId;
    final Instant acquiredAt;
    final Instant expiresAt;

    Held(long snapshotId, List<DataFile> files, String holder, String holderProcess, long loadId,
        Instant acquiredAt, Instant expiresAt) {
      this.snapshotId = snapshotId;
      this.files = files;
      this.holder = holder;
      this.holderProcess = holderProcess;
      this.loadId = loadId;
      this.acquiredAt = acquiredAt;
      this.expiresAt = expiresAt;
    }

    static Held read(Table table, String name) throws Exception {
      Snapshot current = table.currentSnapshot();
      if (current == null) {
        throw new IllegalStateException("run lock: expected one lock row in " + name + ", found 0");
      }
      List<DataFile> files = new ArrayList<>();
      try (CloseableIterable<FileScanTask> tasks =
          table.newScan().useSnapshot(current.snapshotId()).planFiles()) {
        for (FileScanTask task : tasks) {
          files.add(task.file());
        }
      }
      List<Record> rows = new ArrayList<>();
      try (CloseableIterable<Record> records =
          IcebergGenerics.read(table)
              .useSnapshot(current.snapshotId())
              .where(Expressions.equal("lock_name", LOCK_NAME))
              .build()) {
        for (Record record : records) {
          rows.add(record.copy());
        }
      }
      if (rows.size() != 1) {
        throw new IllegalStateException(
            "run lock: expected one lock row in " + name + ", found " + rows.size());
      }
      Record row = rows.get(0);
      Object loadId = row.getField("load_id");
      return new Held(
          current.snapshotId(),
          files,
          (String) row.getField("holder"),
          (String) row.getField("holder_process"),
          loadId == null ? 0L : ((Number) loadId).longValue(),
          instant(row.getField("acquired_at")),
          instant(row.getField("expires_at")));
    }

    /** Why a held lock may be taken over, or null while its holder may still be running. */
    String takeOverReason() {
      if (holder == null) {
        return null;
      }
      if (RunProcess.isGone(holderProcess)) {
        return "its process died";
      }
      if (expiresAt != null && expiresAt.isBefore(Instant.now())) {
        return "its lease ended";
      }
      return null;
    }

    Held with(String newHolder, String process, long newLoadId, Instant acquired, Instant expires) {
      return new Held(snapshotId, files, newHolder, process, newLoadId, acquired, expires);
    }

    Record record(Table table) {
      GenericRecord record = GenericRecord.create(table.schema());
      record.setField("lock_name", LOCK_NAME);
      record.setField("holder", holder);
      record.setField("holder_process", holderProcess);
      record.setField("load_id", loadId);
      record.setField("acquired_at", value(table, "acquired_at", acquiredAt));
      record.setField("expires_at", value(table, "expires_at", expiresAt));
      return record;
    }

    String json(String extra) {
      return "{\"holder\": " + quote(holder)
          + ", \"holder_process\": " + quote(holderProcess)
          + ", \"load_id\": " + loadId
          + ", \"acquired_at\": " + quote(text(acquiredAt))
          + ", \"expires_at\": " + quote(text(expiresAt))
          + (extra == null ? "" : ", " + extra)
          + "}";
    }

    /** A timestamp column as Iceberg's generic rows hold it: with or without a zone. */
    private static Object value(Table table, String column, Instant instant) {
      if (instant == null) {
        return null;
      }
      Types.TimestampType type = (Types.TimestampType) table.schema().findType(column);
      return type.shouldAdjustToUTC()
          ? instant.atOffset(ZoneOffset.UTC)
          : instant.atOffset(ZoneOffset.UTC).toLocalDateTime();
    }

    private static Instant instant(Object value) {
      if (value == null) {
        return null;
      }
      if (value instanceof OffsetDateTime) {
        return ((OffsetDateTime) value).toInstant();
      }
      return ((LocalDateTime) value).toInstant(ZoneOffset.UTC);
    }
  }
}
