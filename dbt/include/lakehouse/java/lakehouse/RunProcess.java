package lakehouse;

import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;

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
    return !new File("/proc/" + pid).exists() || isZombie(pid);
  }

  /** A zombie has exited; it only waits for its parent to collect its exit status. */
  private static boolean isZombie(String pid) {
    try {
      byte[] stat = Files.readAllBytes(new File("/proc/" + pid + "/stat").toPath());
      String line = new String(stat, StandardCharsets.US_ASCII); // "pid (name) S ..."
      int close = line.lastIndexOf(')');
      return close > 0 && line.length() > close + 2 && line.charAt(close + 2) == 'Z';
    } catch (IOException e) {
      return true; // it vanished between the two checks
    }
  }

  private static String host() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      return "unknown";
    }
  }
}
