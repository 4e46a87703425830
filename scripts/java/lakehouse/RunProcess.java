package lakehouse;

import java.io.File;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * Who holds the run lock, and whether that holder is gone. Called from SQL with reflect():
 * the run lock records id() of the JVM that took it ("pid@host"); a later run on the same
 * host may take over a lock whose process no longer exists (a run killed with SIGKILL)
 * instead of waiting for the lease to end. On another host, or on a long-lived Thrift
 * server, nothing can be known: isGone() answers false and the lease decides. Java 8
 * compatible (Spark 3.5 clusters may run it): liveness is read from /proc where it exists.
 */
public final class RunProcess {
  private RunProcess() {}

  public static String id() {
    String name = ManagementFactory.getRuntimeMXBean().getName(); // "pid@hostname"
    return name.substring(0, name.indexOf('@')) + "@" + host();
  }

  /** True only when the holder ran on this host and its process no longer exists. */
  public static boolean isGone(String holder) {
    if (holder == null) return false;
    int at = holder.indexOf('@');
    if (at < 1 || !holder.substring(at + 1).equals(host())) return false;
    String pid = holder.substring(0, at);
    if (!pid.matches("[0-9]+") || !new File("/proc/self").exists()) return false;
    return !new File("/proc/" + pid).exists();
  }

  private static String host() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      return "unknown";
    }
  }
}
