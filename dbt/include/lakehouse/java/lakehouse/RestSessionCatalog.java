package lakehouse;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.spark.SparkSessionCatalog;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchViewException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.PersistedView$;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.View;
import org.apache.spark.sql.connector.catalog.ViewCatalog;
import org.apache.spark.sql.connector.catalog.ViewChange;
import org.apache.spark.sql.execution.command.CreateViewCommand;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Option;
import scala.Tuple2;
import scala.collection.JavaConverters;
import scala.collection.Seq;

/**
 * spark_catalog over a catalog service (REST): Iceberg's SparkSessionCatalog, whose Iceberg
 * tables live in the service and whose other objects (the landing zone's file-source tables,
 * views) live in Spark's built-in catalog, so dbt's two-part names keep working.
 *
 * <p>SparkSessionCatalog alone falls short over REST in two ways (tried here). It sends every
 * namespace operation and every listing to the built-in catalog only, which was enough when both
 * shared a Hive metastore: {@code create schema ods} never reached the service, and the next
 * {@code create table} failed with no such namespace. And Iceberg's extensions send {@code create
 * view} to it as an Iceberg view catalog, hence to the service, which SeaweedFS's REST catalog
 * (like S3 Tables) does not implement. Here schemas are created and dropped in both catalogs,
 * listings are the union of both, and views are Spark's own, kept in the built-in catalog as
 * for any session catalog. Everything else (tables, branches and tags, procedures) is
 * SparkSessionCatalog's.
 */
public class RestSessionCatalog<
        T extends TableCatalog & FunctionCatalog & SupportsNamespaces & ViewCatalog>
    extends SparkSessionCatalog<T> {
  private TableCatalog service;
  private SupportsNamespaces serviceNamespaces;
  private SupportsNamespaces builtIn;

  @Override
  protected TableCatalog buildSparkCatalog(String name, CaseInsensitiveStringMap options) {
    this.service = super.buildSparkCatalog(name, options);
    this.serviceNamespaces = (SupportsNamespaces) service;
    return service;
  }

  @Override
  public void setDelegateCatalog(org.apache.spark.sql.connector.catalog.CatalogPlugin delegate) {
    super.setDelegateCatalog(delegate);
    this.builtIn = (SupportsNamespaces) delegate;
  }

  /**
   * The tables of {@code namespace} in the catalog service, one name per line. Spark 3.5 runs
   * {@code show table extended} on spark_catalog as a v1 command against the built-in catalog
   * only, so dbt's relation listing asks here: {@code select reflect('lakehouse.RestSessionCatalog',
   * 'serviceTables', 'ods') from values (1)} (see DriverSession). Empty for a namespace the
   * service does not have.
   */
  public static String serviceTables(String namespace) throws NoSuchNamespaceException {
    SparkSession session = DriverSession.get("RestSessionCatalog.serviceTables");
    Object catalog = session.sessionState().catalogManager().catalog("spark_catalog");
    if (!(catalog instanceof RestSessionCatalog)) {
      throw new IllegalStateException("spark_catalog is not a RestSessionCatalog: " + catalog);
    }
    RestSessionCatalog<?> rest = (RestSessionCatalog<?>) catalog;
    String[] path = namespace.split("\\.");
    StringBuilder names = new StringBuilder();
    if (rest.serviceNamespaces.namespaceExists(path)) {
      for (Identifier table : rest.service.listTables(path)) {
        names.append(table.name()).append('\n');
      }
    }
    return names.toString();
  }

  // -- namespaces: in both catalogs --------------------------------------------------------------

  @Override
  public void createNamespace(String[] namespace, Map<String, String> metadata)
      throws NamespaceAlreadyExistsException {
    boolean inService = serviceNamespaces.namespaceExists(namespace);
    boolean inBuiltIn = builtIn.namespaceExists(namespace);
    if (inService && inBuiltIn) {
      throw new NamespaceAlreadyExistsException(namespace);
    }
    if (!inService) {
      serviceNamespaces.createNamespace(namespace, metadata);
    }
    if (!inBuiltIn) {
      builtIn.createNamespace(namespace, metadata);
    }
  }

  /**
   * A schema is whole when both catalogs have it. One the service has but the built-in
   * catalog lacks (a fresh metastore beside an existing catalog: a new machine, a CI runner)
   * is added to the built-in catalog here, so listings never show a schema whose views and
   * landing tables could not be created. One only the built-in catalog has does not exist
   * yet for Iceberg tables: `create schema if not exists` then creates it in the service.
   */
  @Override
  public boolean namespaceExists(String[] namespace) {
    if (!serviceNamespaces.namespaceExists(namespace)) {
      return Arrays.equals(namespace, defaultNamespace()) && builtIn.namespaceExists(namespace);
    }
    completeInBuiltIn(namespace);
    return true;
  }

  @Override
  public String[][] listNamespaces() throws NoSuchNamespaceException {
    Set<List<String>> names = new LinkedHashSet<>();
    for (String[] namespace : builtIn.listNamespaces()) {
      names.add(Arrays.asList(namespace));
    }
    for (String[] namespace : serviceNamespaces.listNamespaces()) {
      completeInBuiltIn(namespace);
      names.add(Arrays.asList(namespace));
    }
    return names.stream().map(each -> each.toArray(new String[0])).toArray(String[][]::new);
  }

  private void completeInBuiltIn(String[] namespace) {
    if (!builtIn.namespaceExists(namespace)) {
      try {
        builtIn.createNamespace(namespace, java.util.Collections.emptyMap());
      } catch (NamespaceAlreadyExistsException e) {
        // another session made it meanwhile
      }
    }
  }

  @Override
  public Map<String, String> loadNamespaceMetadata(String[] namespace)
      throws NoSuchNamespaceException {
    return builtIn.namespaceExists(namespace)
        ? builtIn.loadNamespaceMetadata(namespace)
        : serviceNamespaces.loadNamespaceMetadata(namespace);
  }

  @Override
  public boolean dropNamespace(String[] namespace, boolean cascade)
      throws NoSuchNamespaceException, NonEmptyNamespaceException {
    boolean dropped = false;
    if (serviceNamespaces.namespaceExists(namespace)) {
      dropped = serviceNamespaces.dropNamespace(namespace, cascade);
    }
    if (builtIn.namespaceExists(namespace)) {
      dropped = builtIn.dropNamespace(namespace, cascade) || dropped;
    }
    return dropped;
  }

  @Override
  public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
    Set<Identifier> tables = new LinkedHashSet<>();
    if (serviceNamespaces.namespaceExists(namespace)) {
      tables.addAll(Arrays.asList(service.listTables(namespace)));
    }
    if (builtIn.namespaceExists(namespace)) {
      tables.addAll(Arrays.asList(super.listTables(namespace)));
    }
    return tables.toArray(new Identifier[0]);
  }

  // -- views: Spark's own, in the built-in catalog ---------------------------------------------
  // Iceberg's ResolveViews asks loadView first: "no such view" lets Spark resolve the built-in
  // catalog's view as usual.

  private static SessionCatalog v1() {
    return DriverSession.get("RestSessionCatalog").sessionState().catalog();
  }

  private static TableIdentifier v1Name(Identifier ident) {
    return new TableIdentifier(ident.name(), Option.apply(ident.namespace()[0]));
  }

  @Override
  public View loadView(Identifier ident) throws NoSuchViewException {
    throw new NoSuchViewException(ident);
  }

  @Override
  public boolean viewExists(Identifier ident) {
    if (ident.namespace().length != 1 || !v1().tableExists(v1Name(ident))) {
      return false;
    }
    try {
      return v1().getTableMetadata(v1Name(ident)).tableType().name().equals("VIEW");
    } catch (Exception e) { // dropped meanwhile
      return false;
    }
  }

  @Override
  public Identifier[] listViews(String... namespace) {
    List<Identifier> views = new ArrayList<>();
    try {
      for (TableIdentifier view :
          JavaConverters.seqAsJavaList(v1().listViews(namespace[0], "*"))) {
        if (view.database().isDefined()) { // not the session's temporary views
          views.add(Identifier.of(namespace, view.table()));
        }
      }
    } catch (RuntimeException e) { // no such schema in the built-in catalog
      return new Identifier[0];
    }
    return views.toArray(new Identifier[0]);
  }

  @Override
  public View createView(
      Identifier ident,
      String sql,
      String currentCatalog,
      String[] currentNamespace,
      StructType schema,
      String[] queryColumnNames,
      String[] columnAliases,
      String[] columnComments,
      Map<String, String> properties) {
    storeView(ident, sql, columnAliases, columnComments, false);
    return null; // Iceberg's CreateV2ViewExec does not read it
  }

  @Override
  public View replaceView(
      Identifier ident,
      String sql,
      String currentCatalog,
      String[] currentNamespace,
      StructType schema,
      String[] queryColumnNames,
      String[] columnAliases,
      String[] columnComments,
      Map<String, String> properties) {
    storeView(ident, sql, columnAliases, columnComments, true);
    return null;
  }

  @Override
  public View alterView(Identifier ident, ViewChange... changes) {
    throw new UnsupportedOperationException("alter view: re-create the view instead");
  }

  @Override
  public boolean dropView(Identifier ident) {
    if (!viewExists(ident)) {
      return false;
    }
    v1().dropTable(v1Name(ident), true, false);
    return true;
  }

  /** Spark's own CREATE [OR REPLACE] VIEW, run against the built-in catalog. */
  private static void storeView(
      Identifier ident, String sql, String[] aliases, String[] comments, boolean replace) {
    SparkSession session = DriverSession.get("RestSessionCatalog.createView");
    LogicalPlan query = session.sql(sql).queryExecution().analyzed();
    List<Tuple2<String, Option<String>>> columns = new ArrayList<>();
    for (int i = 0; aliases != null && i < aliases.length; i++) {
      String comment = comments != null && i < comments.length ? comments[i] : null;
      columns.add(new Tuple2<>(aliases[i], Option.apply(comment)));
    }
    Seq<Tuple2<String, Option<String>>> userColumns =
        JavaConverters.asScalaBuffer(columns).toSeq();
    Seq<String> noFunctions = JavaConverters.asScalaBuffer(new ArrayList<String>()).toSeq();
    new CreateViewCommand(
            v1Name(ident),
            userColumns,
            Option.empty(),
            scala.collection.immutable.Map$.MODULE$.empty(),
            Option.apply(sql),
            query,
            false,
            replace,
            PersistedView$.MODULE$,
            true, // analyzed above

            noFunctions)
        .run(session);
  }
}
