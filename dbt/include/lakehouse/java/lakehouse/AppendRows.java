package lakehouse;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.spark.Spark3Util;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * Appends rows to an unpartitioned Iceberg table in one commit of one data file, without a
 * Spark job: a log row per model (the maintenance log) cost an `insert ... values` statement,
 * a job and about a second; this costs the commit.
 *
 * <p>Call it as {@code select reflect('lakehouse.AppendRows', 'append', table, rowsJson) from
 * values (1)} (see DriverSession). {@code rowsJson} is a JSON array of objects keyed by column
 * name; a column left out is null. Timestamps are ISO text in UTC; arrays and maps of strings
 * and numbers as JSON. It answers {@code missing} when the table does not exist yet, else
 * {@code appended <rows>}.
 */
public final class AppendRows {
  private static final ObjectMapper JSON = new ObjectMapper();

  private AppendRows() {}

  public static String append(String table, String rowsJson) throws Exception {
    Table iceberg;
    try {
      iceberg = Spark3Util.loadIcebergTable(DriverSession.get("AppendRows"), table);
    } catch (org.apache.spark.sql.catalyst.analysis.NoSuchTableException
        | org.apache.iceberg.exceptions.NoSuchTableException missing) {
      return "missing";
    }
    List<Map<String, Object>> given =
        JSON.readValue(rowsJson, new TypeReference<List<Map<String, Object>>>() {});
    List<Record> rows = new ArrayList<>();
    for (Map<String, Object> values : given) {
      GenericRecord row = GenericRecord.create(iceberg.schema());
      for (Types.NestedField field : iceberg.schema().columns()) {
        row.setField(field.name(), convert(field.type(), values.get(field.name()), field.name()));
      }
      rows.add(row);
    }
    iceberg.newFastAppend().appendFile(DataFileWriter.write(iceberg, "rows", rows)).commit();
    return "appended " + rows.size();
  }

  private static Object convert(Type type, Object value, String column) {
    if (value == null) {
      return null;
    }
    switch (type.typeId()) {
      case STRING:
        return value.toString();
      case LONG:
        return ((Number) value).longValue();
      case INTEGER:
        return ((Number) value).intValue();
      case DOUBLE:
        return ((Number) value).doubleValue();
      case BOOLEAN:
        return value;
      case TIMESTAMP:
        LocalDateTime utc = LocalDateTime.parse(value.toString().replace(' ', 'T'));
        return ((Types.TimestampType) type).shouldAdjustToUTC() ? utc.atOffset(ZoneOffset.UTC) : utc;
      case LIST:
        List<Object> items = new ArrayList<>();
        for (Object item : (List<?>) value) {
          items.add(convert(type.asListType().elementType(), item, column));
        }
        return items;
      case MAP:
        Map<Object, Object> entries = new LinkedHashMap<>();
        for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
          entries.put(
              convert(type.asMapType().keyType(), entry.getKey(), column),
              convert(type.asMapType().valueType(), entry.getValue(), column));
        }
        return entries;
      default:
        throw new IllegalArgumentException(
            "AppendRows: column " + column + " of type " + type + " is not supported");
    }
  }
}
