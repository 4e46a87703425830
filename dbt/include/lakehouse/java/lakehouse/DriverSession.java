package lakehouse;

import org.apache.spark.sql.SparkSession;
import scala.Option;

/** The driver's Spark session, for helpers called from SQL with reflect(). */
final class DriverSession {
  private DriverSession() {}

  /**
   * A projection over an inline table ({@code select reflect(...) from values (1)}) is
   * evaluated by Spark's optimizer on the driver, where the session is; without the
   * {@code from values (1)} the call would run in a task, on an executor, and fail here.
   */
  static SparkSession get(String caller) {
    Option<SparkSession> session = SparkSession.getActiveSession();
    if (session.isEmpty()) {
      session = SparkSession.getDefaultSession();
    }
    if (session.isEmpty()) {
      throw new IllegalStateException(
          caller + " needs the driver's Spark session: call it as select reflect(...) from values (1)");
    }
    return session.get();
  }
}
