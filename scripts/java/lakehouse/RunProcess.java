package lakehouse;

import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * Who holds the run lock, and whether that holder is gone. Called from SQL with reflect():
 * the run lock records id() of the JVM that took it ("pid@host"); a later run on the same
 * host may take over a lock whose process no longer exists (a run killed with SIGKILL)
 * instead of waiting for the lease to end. On another host, or on a long-lived Thrift
 * server, nothing can be known: isGone() answers false and the lease decides.
 */
public final class RunProcess {
  private RunProcess() {}

  public static String id() {
    return ProcessHandleCompat.pid() + "@" + host();
  }

  /** True only when the holder ran on this host and its process no longer exists. */
  public static boolean isGone(String holder) {
    if (holder == null) return false;
    int at = holder.indexOf('@');
    if (at < 1 || !holder.substring(at + 1).equals(host())) return false;
    try {
      return !ProcessHandleCompat.isAlive(Long.parseLong(holder.substring(0, at)));
    } catch (NumberFormatException e) {
      return false;
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
