"""Iceberg's own Java API, reached through py4j: write data and equality-delete files and
commit them with RowDelta or RewriteFiles exactly as engines do. Used by the verification
scripts so they exercise Iceberg's real commit path and validation, not a model of it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession


@dataclass
class IcebergTable:
    spark: SparkSession
    name: str  # catalog.namespace.table

    @property
    def jvm(self) -> Any:
        return self.spark._jvm

    def load(self) -> Any:
        """A fresh org.apache.iceberg.Table (the verify catalog does not cache)."""
        return self.jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            self.spark._jsparkSession, self.name
        )

    def current_snapshot(self) -> Any:
        return self.load().currentSnapshot()

    def data_files(self, snapshot_id: int) -> list[Any]:
        """The data files a scan of `snapshot_id` plans: what a compaction would rewrite."""
        tasks = self.load().newScan().useSnapshot(snapshot_id).planFiles()
        files, iterator = [], tasks.iterator()
        while iterator.hasNext():
            files.append(iterator.next().file())
        tasks.close()
        return files

    # -- writers -------------------------------------------------------------------------

    def _factory(self, table: Any, equality_columns: list[str] | None = None) -> Any:
        iceberg = self.jvm.org.apache.iceberg
        schema = table.schema()
        if not equality_columns:
            return iceberg.data.GenericAppenderFactory(schema, table.spec())
        gateway = self.spark.sparkContext._gateway
        ids = gateway.new_array(self.jvm.int, len(equality_columns))
        names = gateway.new_array(self.jvm.String, len(equality_columns))
        for i, column in enumerate(equality_columns):
            ids[i] = schema.findField(column).fieldId()
            names[i] = column
        return iceberg.data.GenericAppenderFactory(
            schema, table.spec(), ids, schema.select(names), None
        )

    def _output(self, table: Any, prefix: str) -> Any:
        location = table.locationProvider().newDataLocation(f"{prefix}-{uuid.uuid4()}.parquet")
        return self.jvm.org.apache.iceberg.encryption.EncryptedFiles.plainAsEncryptedOutput(
            table.io().newOutputFile(location)
        )

    def _record(self, table: Any, row: dict[str, Any]) -> Any:
        record = self.jvm.org.apache.iceberg.data.GenericRecord.create(table.schema())
        for column, value in row.items():
            record.setField(column, value)
        return record

    def write_data_file(self, rows: list[dict[str, Any]], prefix: str = "data") -> Any:
        table = self.load()
        writer = self._factory(table).newDataWriter(
            self._output(table, prefix), self.jvm.org.apache.iceberg.FileFormat.PARQUET, None
        )
        for row in rows:
            writer.write(self._record(table, row))
        writer.close()
        return writer.toDataFile()

    def write_equality_deletes(self, keys: list[dict[str, Any]]) -> Any:
        table = self.load()
        columns = list(keys[0])
        delete_schema = table.schema().select(columns)
        writer = self._factory(table, columns).newEqDeleteWriter(
            self._output(table, "eq-deletes"), self.jvm.org.apache.iceberg.FileFormat.PARQUET, None
        )
        for key in keys:
            record = self.jvm.org.apache.iceberg.data.GenericRecord.create(delete_schema)
            for column, value in key.items():
                record.setField(column, value)
            writer.write(record)
        writer.close()
        return writer.toDeleteFile()

    # -- commits ---------------------------------------------------------------------------

    def upsert_with_equality_delete(self, key_column: str, rows: list[dict[str, Any]]) -> int:
        """Flink-style upsert: an equality delete of the keys plus the new rows, one RowDelta.
        Data and delete share a sequence number, so the delete spares the new rows."""
        deletes = self.write_equality_deletes([{key_column: row[key_column]} for row in rows])
        data = self.write_data_file(rows, prefix="upsert")
        self.load().newRowDelta().addRows(data).addDeletes(deletes).commit()
        return self.current_snapshot().snapshotId()

    def delete_with_equality_delete(self, key_column: str, keys: list[Any]) -> int:
        deletes = self.write_equality_deletes([{key_column: key} for key in keys])
        self.load().newRowDelta().addDeletes(deletes).commit()
        return self.current_snapshot().snapshotId()

    def delete_data_files(self, paths: list[str]) -> int:
        """Remove whole data files from the table in metadata, as a copy-on-write DELETE whose
        predicate covers them does. Passes DataFile objects on purpose: given a Python str,
        py4j picks SnapshotProducer's protected deleteFile(String), which deletes the file
        from storage and commits nothing."""
        table = self.load()
        wanted = set(paths)
        delete = table.newDelete()
        for data_file in self.data_files(table.currentSnapshot().snapshotId()):
            if str(data_file.location()) in wanted:
                delete.deleteFile(data_file)
                wanted.discard(str(data_file.location()))
        if wanted:
            raise ValueError(f"not live data files: {sorted(wanted)}")
        delete.commit()
        return self.current_snapshot().snapshotId()

    def commit_rewrite(
        self,
        replaced: list[Any],
        added: list[Any],
        validate_from_snapshot_id: int,
        data_sequence_number: int | None,
    ) -> int:
        """What Iceberg's RewriteDataFilesCommitManager does: RewriteFiles validated from the
        snapshot the compaction planned on, keeping that snapshot's sequence number when
        use-starting-sequence-number is true."""
        rewrite = self.load().newRewrite().validateFromSnapshot(validate_from_snapshot_id)
        if data_sequence_number is not None:
            rewrite = rewrite.dataSequenceNumber(data_sequence_number)
        for data_file in replaced:
            rewrite = rewrite.deleteFile(data_file)
        for data_file in added:
            rewrite = rewrite.addFile(data_file)
        rewrite.commit()
        return self.current_snapshot().snapshotId()
