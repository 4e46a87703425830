package lakehouse;

import java.util.List;
import java.util.UUID;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericAppenderFactory;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.FileAppender;
import org.apache.iceberg.io.OutputFile;

/** A few rows written as one Parquet data file of an unpartitioned table, not yet committed:
 * the helpers' small writes without a Spark job. */
final class DataFileWriter {
  private DataFileWriter() {}

  static DataFile write(Table table, String prefix, List<Record> rows) throws Exception {
    OutputFile out =
        table
            .io()
            .newOutputFile(
                table.locationProvider().newDataLocation(prefix + "-" + UUID.randomUUID() + ".parquet"));
    FileAppender<Record> appender =
        new GenericAppenderFactory(table.schema()).newAppender(out, FileFormat.PARQUET);
    try {
      for (Record row : rows) {
        appender.add(row);
      }
    } finally {
      appender.close();
    }
    return DataFiles.builder(table.spec())
        .withInputFile(out.toInputFile())
        .withMetrics(appender.metrics())
        .withFormat(FileFormat.PARQUET)
        .build();
  }
}
