package lakehouse;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.ManifestContent;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestReader;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.spark.Spark3Util;

/**
 * The maintenance decision's full health read of an Iceberg table, from its manifests through
 * Iceberg's API: what a query over the `files` and `manifests` metadata tables answers, without
 * planning one. The query (and the `describe table` that found the partitioning first) took
 * about a second per table; a write-audit-publish run reads every table it published, one
 * after the other, before it releases the run lock.
 *
 * <p>Call it as {@code select reflect('lakehouse.TableHealth', 'read', table, smallFileBytes,
 * smallManifestBytes, minSmallFiles) from values (1)} (see DriverSession).
 */
public final class TableHealth {
  private TableHealth() {}

  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * The health of main's current snapshot, as JSON (macros/maintenance/iceberg_table_health.sql
   * names each counter). A data file is small below {@code smallFileBytes}; a partition is
   * crowded when it holds at least {@code minSmallFiles} small data files; a position-delete
   * file is surplus when another one already covers the same data file (or, for
   * partition-scoped deletes, the same partition); a manifest is small below {@code
   * smallManifestBytes}. A table without a snapshot has every counter at zero.
   */
  public static String read(
      String table, String smallFileBytes, String smallManifestBytes, String minSmallFiles)
      throws Exception {
    Table iceberg = Spark3Util.loadIcebergTable(DriverSession.get("TableHealth.read"), table);
    long small = Long.parseLong(smallFileBytes.trim());
    long smallManifest = Long.parseLong(smallManifestBytes.trim());
    long crowdedAt = Long.parseLong(minSmallFiles.trim());
    boolean partitioned = !iceberg.spec().isUnpartitioned();

    Counts counts = new Counts();
    Map<String, Long> smallFilesByPartition = new HashMap<>();
    Set<String> positionDeleteTargets = new HashSet<>();
    long manifests = 0;
    long smallManifests = 0;
    Snapshot current = iceberg.currentSnapshot();
    if (current != null) {
      FileIO io = iceberg.io();
      Map<Integer, PartitionSpec> specs = iceberg.specs();
      for (ManifestFile manifest : current.allManifests(io)) {
        manifests++;
        if (manifest.length() < smallManifest) {
          smallManifests++;
        }
        if (manifest.content() == ManifestContent.DATA) {
          try (ManifestReader<DataFile> reader = ManifestFiles.read(manifest, io, specs)) {
            for (DataFile file : reader) {
              String partition = partitioned ? partitionKey(specs, file) : "";
              counts.dataFiles++;
              counts.dataBytes += file.fileSizeInBytes();
              counts.dataRecords += file.recordCount();
              long isSmall = file.fileSizeInBytes() < small ? 1 : 0;
              counts.smallFiles += isSmall;
              smallFilesByPartition.merge(partition, isSmall, Long::sum);
            }
          }
        } else {
          try (ManifestReader<DeleteFile> reader =
              ManifestFiles.readDeleteManifest(manifest, io, specs)) {
            for (DeleteFile file : reader) {
              String partition = partitioned ? partitionKey(specs, file) : "";
              smallFilesByPartition.putIfAbsent(partition, 0L);
              counts.deletedRecords += file.recordCount();
              if (file.content() == FileContent.POSITION_DELETES) {
                counts.positionDeleteFiles++;
                String target = referencedDataFile(file);
                positionDeleteTargets.add(target == null ? "partition:" + partition : "file:" + target);
              } else {
                counts.equalityDeleteFiles++;
              }
            }
          }
        }
      }
    }

    long maxSmall = 0;
    long crowdedPartitions = 0;
    long crowdedSmallFiles = 0;
    for (long smallFiles : smallFilesByPartition.values()) {
      maxSmall = Math.max(maxSmall, smallFiles);
      if (smallFiles >= crowdedAt) {
        crowdedPartitions++;
        crowdedSmallFiles += smallFiles;
      }
    }
    Map<String, Object> health = new LinkedHashMap<>();
    health.put("data_files", counts.dataFiles);
    health.put("data_bytes", counts.dataBytes);
    health.put("small_files", counts.smallFiles);
    health.put("position_delete_files", counts.positionDeleteFiles);
    health.put("equality_delete_files", counts.equalityDeleteFiles);
    health.put("position_delete_targets", (long) positionDeleteTargets.size());
    health.put("data_records", counts.dataRecords);
    health.put("deleted_records", counts.deletedRecords);
    health.put(
        "surplus_position_delete_files",
        counts.positionDeleteFiles - positionDeleteTargets.size());
    health.put("max_small_files_in_partition", maxSmall);
    health.put("crowded_partitions", crowdedPartitions);
    health.put("crowded_small_files", crowdedSmallFiles);
    health.put("manifests", manifests);
    health.put("small_manifests", smallManifests);
    health.put("checked_at_ms", System.currentTimeMillis());
    health.put("partitioned", partitioned);
    return JSON.writeValueAsString(health);
  }

  private static final class Counts {
    long dataFiles;
    long dataBytes;
    long dataRecords;
    long smallFiles;
    long positionDeleteFiles;
    long equalityDeleteFiles;
    long deletedRecords;
  }

  /** A file's partition as its spec writes it in paths, e.g. {@code event_date=2026-01-02}. */
  private static String partitionKey(Map<Integer, PartitionSpec> specs, ContentFile<?> file) {
    return specs.get(file.specId()).partitionToPath(file.partition());
  }

  /**
   * The one data file a position-delete file covers: a deletion vector names it, and a file
   * whose `file_path` column bounds are equal holds deletes of that file only (Spark writes one
   * such file per data file). Null when the file covers several data files.
   */
  private static String referencedDataFile(DeleteFile file) {
    if (file.referencedDataFile() != null) {
      return file.referencedDataFile();
    }
    int pathField = MetadataColumns.DELETE_FILE_PATH.fieldId();
    Map<Integer, ByteBuffer> lower = file.lowerBounds();
    Map<Integer, ByteBuffer> upper = file.upperBounds();
    if (lower == null || upper == null) {
      return null;
    }
    ByteBuffer from = lower.get(pathField);
    ByteBuffer to = upper.get(pathField);
    if (from == null || !from.equals(to)) {
      return null;
    }
    return StandardCharsets.UTF_8.decode(from.duplicate()).toString();
  }
}
