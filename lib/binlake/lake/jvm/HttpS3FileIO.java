/*
 * binlake's S3 FileIO for Iceberg: the JDK alone (java.net.http, SigV4 signing), no AWS SDK.
 *
 * Why: Iceberg's own S3FileIO needs the AWS SDK v2 bundle (iceberg-aws-bundle), which online
 * users add through spark_packages and which no package installable offline ships. With this
 * FileIO, Spark's Iceberg catalog reads and writes tables whose warehouse is on S3 or an
 * S3-compatible store (MinIO, moto, Ceph) with nothing but the JDK: the lake's commit path is
 * the same for a local and an S3 warehouse (docs/lake.md, "Where the tables live").
 *
 * What it supports: GET (ranged, buffered), HEAD, PUT (one request, up to 5 GiB: Iceberg
 * writes metadata, manifests and Spark's data files through it; binlake's executors write
 * their data files through pyarrow), DELETE, ListObjectsV2 (prefix listing for orphan
 * cleanup). Credentials: the catalog properties s3.access-key-id / s3.secret-access-key /
 * s3.session-token, else the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN); no instance profiles or web identity: on AWS with roles, use Iceberg's
 * S3FileIO. Endpoint: s3.endpoint, else AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL /
 * BINLAKE_S3_ENDPOINT_URL, else AWS (https://s3.REGION.amazonaws.com). Region: client.region,
 * else AWS_REGION / AWS_DEFAULT_REGION, else us-east-1. Path-style addressing:
 * s3.path-style-access (default: true with an endpoint, false on AWS).
 *
 * Built by binlake (lake/jvm.py) with javac against the Iceberg runtime jar it runs with.
 */
package binlake.iceberg;

import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import javax.xml.parsers.DocumentBuilderFactory;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.BulkDeletionFailureException;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.PositionOutputStream;
import org.apache.iceberg.io.RangeReadable;
import org.apache.iceberg.io.SeekableInputStream;
import org.apache.iceberg.io.SupportsBulkOperations;
import org.apache.iceberg.io.SupportsPrefixOperations;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

public class HttpS3FileIO implements SupportsPrefixOperations, SupportsBulkOperations {
  private static final long serialVersionUID = 1L;
  static final int CHUNK = 4 << 20; // bytes fetched per ranged GET when reading in small pieces
  static final long MAX_PUT = 5L << 30; // S3's limit for one PUT

  private HashMap<String, String> props = new HashMap<>();
  private transient volatile Client client;

  public HttpS3FileIO() {}

  @Override
  public void initialize(Map<String, String> properties) {
    props = new HashMap<>(properties);
    client = null;
  }

  @Override
  public Map<String, String> properties() {
    return props;
  }

  Client client() {
    Client c = client;
    if (c == null) {
      synchronized (this) {
        if (client == null) client = new Client(props);
        c = client;
      }
    }
    return c;
  }

  @Override
  public InputFile newInputFile(String path) {
    return new In(client(), path, -1);
  }

  @Override
  public InputFile newInputFile(String path, long length) {
    return new In(client(), path, length);
  }

  @Override
  public OutputFile newOutputFile(String path) {
    return new Out(client(), path);
  }

  @Override
  public void deleteFile(String path) {
    client().delete(path);
  }

  @Override
  public void deleteFiles(Iterable<String> paths) throws BulkDeletionFailureException {
    int failed = 0;
    for (String p : paths) {
      try {
        client().delete(p);
      } catch (RuntimeException e) {
        failed++;
      }
    }
    if (failed > 0) throw new BulkDeletionFailureException(failed);
  }

  @Override
  public Iterable<FileInfo> listPrefix(String prefix) {
    return client().list(prefix);
  }

  @Override
  public void deletePrefix(String prefix) {
    for (FileInfo f : client().list(prefix)) client().delete(f.location());
  }

  // ---------------------------------------------------------------------------------------

  /** An s3://bucket/key location. */
  static final class Loc {
    final String bucket;
    final String key;

    Loc(String location) {
      int i = location.indexOf("://");
      if (i < 0) throw new IllegalArgumentException("not an S3 location: " + location);
      String scheme = location.substring(0, i);
      if (!scheme.equals("s3") && !scheme.equals("s3a") && !scheme.equals("s3n")) {
        throw new IllegalArgumentException("not an S3 location: " + location);
      }
      String rest = location.substring(i + 3);
      int slash = rest.indexOf('/');
      bucket = slash < 0 ? rest : rest.substring(0, slash);
      key = slash < 0 ? "" : rest.substring(slash + 1);
      if (bucket.isEmpty()) throw new IllegalArgumentException("no bucket in " + location);
    }
  }

  /** Signed requests to one S3 endpoint. */
  static final class Client {
    final String endpoint; // scheme://host[:port], no trailing slash; null: AWS
    final String region;
    final boolean pathStyle;
    final String accessKey;
    final String secretKey;
    final String token;
    final HttpClient http;

    Client(Map<String, String> p) {
      String ep = first(p.get("s3.endpoint"), env("AWS_ENDPOINT_URL_S3"), env("AWS_ENDPOINT_URL"),
          env("BINLAKE_S3_ENDPOINT_URL"));
      region = first(p.get("client.region"), p.get("s3.region"), env("AWS_REGION"),
          env("AWS_DEFAULT_REGION"), "us-east-1");
      endpoint = ep == null ? null : ep.replaceAll("/+$", "");
      String ps = p.get("s3.path-style-access");
      pathStyle = ps != null ? Boolean.parseBoolean(ps) : endpoint != null;
      accessKey = first(p.get("s3.access-key-id"), env("AWS_ACCESS_KEY_ID"));
      secretKey = first(p.get("s3.secret-access-key"), env("AWS_SECRET_ACCESS_KEY"));
      token = first(p.get("s3.session-token"), env("AWS_SESSION_TOKEN"));
      http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(30)).build();
    }

    static String env(String k) {
      String v = System.getenv(k);
      return v == null || v.isEmpty() ? null : v;
    }

    static String first(String... vs) {
      for (String v : vs) if (v != null && !v.isEmpty()) return v;
      return null;
    }

    /** (base URL of the bucket, canonical path prefix) for a bucket. */
    String[] base(String bucket) {
      if (pathStyle) {
        String ep = endpoint != null ? endpoint : "https://s3." + region + ".amazonaws.com";
        return new String[] {ep, "/" + encode(bucket, false)};
      }
      String ep = endpoint != null ? endpoint : "https://s3." + region + ".amazonaws.com";
      int i = ep.indexOf("://");
      return new String[] {ep.substring(0, i + 3) + bucket + "." + ep.substring(i + 3), ""};
    }

    HttpResponse<byte[]> send(String method, String bucket, String key,
        Map<String, String> query, Map<String, String> extra, byte[] body, File bodyFile,
        String payloadHash) {
      String[] b = base(bucket);
      String path = b[1] + "/" + encode(key, true);
      StringBuilder q = new StringBuilder();
      for (Map.Entry<String, String> e : new TreeMap<>(query).entrySet()) {
        if (q.length() > 0) q.append('&');
        q.append(encode(e.getKey(), false)).append('=').append(encode(e.getValue(), false));
      }
      URI uri = URI.create(b[0] + path + (q.length() > 0 ? "?" + q : ""));
      IOException last = null;
      for (int attempt = 0; attempt < 5; attempt++) {
        if (attempt > 0) {
          try {
            Thread.sleep(200L << attempt);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new UncheckedIOException(new IOException("interrupted", e));
          }
        }
        HttpRequest.Builder rb = HttpRequest.newBuilder(uri).timeout(Duration.ofMinutes(10));
        HttpRequest.BodyPublisher pub;
        try {
          pub = bodyFile != null ? HttpRequest.BodyPublishers.ofFile(bodyFile.toPath())
              : body != null ? HttpRequest.BodyPublishers.ofByteArray(body)
              : HttpRequest.BodyPublishers.noBody();
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
        rb.method(method, pub);
        for (Map.Entry<String, String> e : extra.entrySet()) rb.header(e.getKey(), e.getValue());
        sign(rb, method, uri, path, q.toString(), payloadHash);
        try {
          HttpResponse<byte[]> r = http.send(rb.build(), HttpResponse.BodyHandlers.ofByteArray());
          int s = r.statusCode();
          if (s == 429 || s == 500 || s == 502 || s == 503 || s == 504) {  // 429, 503: SlowDown
            last = new IOException(describe(method, bucket, key, r));
            continue;
          }
          return r;
        } catch (IOException e) {
          last = e;
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new UncheckedIOException(new IOException("interrupted", e));
        }
      }
      throw new UncheckedIOException(
          new IOException(method + " s3://" + bucket + "/" + key + " failed after 5 attempts", last));
    }

    static String describe(String method, String bucket, String key, HttpResponse<byte[]> r) {
      String body = new String(r.body() == null ? new byte[0] : r.body(), StandardCharsets.UTF_8);
      // S3's error document: <Error><Code>..</Code><Message>..</Message></Error>
      String code = between(body, "<Code>", "</Code>");
      String message = between(body, "<Message>", "</Message>");
      String why = code != null ? code + (message != null ? ": " + message : "")
          : body.replaceAll("\\s+", " ").trim();
      if (why.length() > 300) why = why.substring(0, 300);
      return method + " s3://" + bucket + "/" + key + ": HTTP " + r.statusCode()
          + (why.isEmpty() ? "" : " " + why);
    }

    static String between(String s, String open, String close) {
      int i = s.indexOf(open);
      int j = i < 0 ? -1 : s.indexOf(close, i + open.length());
      return j < 0 ? null : s.substring(i + open.length(), j);
    }

    static UncheckedIOException fail(String method, String bucket, String key,
        HttpResponse<byte[]> r) {
      return new UncheckedIOException(new IOException(describe(method, bucket, key, r)));
    }

    void sign(HttpRequest.Builder rb, String method, URI uri, String path, String query,
        String payloadHash) {
      String amzDate = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'")
          .withZone(ZoneOffset.UTC).format(Instant.now());
      rb.header("x-amz-date", amzDate);
      rb.header("x-amz-content-sha256", payloadHash);
      if (token != null) rb.header("x-amz-security-token", token);
      if (accessKey == null || secretKey == null) return; // anonymous
      String host = uri.getHost() + (uri.getPort() >= 0 ? ":" + uri.getPort() : "");
      TreeMap<String, String> h = new TreeMap<>();
      h.put("host", host);
      h.put("x-amz-content-sha256", payloadHash);
      h.put("x-amz-date", amzDate);
      if (token != null) h.put("x-amz-security-token", token);
      StringBuilder canon = new StringBuilder();
      for (Map.Entry<String, String> e : h.entrySet()) {
        canon.append(e.getKey()).append(':').append(e.getValue().trim()).append('\n');
      }
      String signed = String.join(";", h.keySet());
      String request = method + "\n" + path + "\n" + query + "\n" + canon + "\n" + signed + "\n"
          + payloadHash;
      String date = amzDate.substring(0, 8);
      String scope = date + "/" + region + "/s3/aws4_request";
      String toSign = "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n"
          + hex(sha256(request.getBytes(StandardCharsets.UTF_8)));
      byte[] k = hmac(("AWS4" + secretKey).getBytes(StandardCharsets.UTF_8), date);
      k = hmac(k, region);
      k = hmac(k, "s3");
      k = hmac(k, "aws4_request");
      rb.header("Authorization", "AWS4-HMAC-SHA256 Credential=" + accessKey + "/" + scope
          + ", SignedHeaders=" + signed + ", Signature=" + hex(hmac(k, toSign)));
    }

    static final String EMPTY_SHA256 =
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    long length(String location) {
      Loc l = new Loc(location);
      HttpResponse<byte[]> r = send("HEAD", l.bucket, l.key, Map.of(), Map.of(), null, null,
          EMPTY_SHA256);
      if (r.statusCode() == 404) throw new NotFoundException("File does not exist: %s", location);
      if (r.statusCode() != 200) throw fail("HEAD", l.bucket, l.key, r);
      return r.headers().firstValueAsLong("content-length").orElseThrow(
          () -> new UncheckedIOException(new IOException("HEAD " + location + ": no length")));
    }

    boolean exists(String location) {
      Loc l = new Loc(location);
      HttpResponse<byte[]> r = send("HEAD", l.bucket, l.key, Map.of(), Map.of(), null, null,
          EMPTY_SHA256);
      if (r.statusCode() == 404) return false;
      if (r.statusCode() != 200) throw fail("HEAD", l.bucket, l.key, r);
      return true;
    }

    /** Bytes [start, start + n) of an object. */
    byte[] range(String location, long start, int n) {
      Loc l = new Loc(location);
      HttpResponse<byte[]> r = send("GET", l.bucket, l.key, Map.of(),
          Map.of("Range", "bytes=" + start + "-" + (start + n - 1)), null, null, EMPTY_SHA256);
      if (r.statusCode() == 404) throw new NotFoundException("File does not exist: %s", location);
      if (r.statusCode() != 206 && r.statusCode() != 200) throw fail("GET", l.bucket, l.key, r);
      byte[] got = r.body();
      if (r.statusCode() == 200 && (start != 0 || got.length != n)) {
        // a server that ignored Range: cut the part asked for
        byte[] part = new byte[n];
        System.arraycopy(got, (int) start, part, 0, n);
        return part;
      }
      if (got.length != n) {
        throw new UncheckedIOException(new IOException("GET " + location + " bytes " + start
            + "+" + n + ": got " + got.length + " bytes"));
      }
      return got;
    }

    void put(String location, File file, String sha256) {
      Loc l = new Loc(location);
      HttpResponse<byte[]> r = send("PUT", l.bucket, l.key, Map.of(), Map.of(), null, file,
          sha256);
      if (r.statusCode() != 200) throw fail("PUT", l.bucket, l.key, r);
    }

    void delete(String location) {
      Loc l = new Loc(location);
      HttpResponse<byte[]> r = send("DELETE", l.bucket, l.key, Map.of(), Map.of(), null, null,
          EMPTY_SHA256);
      if (r.statusCode() != 204 && r.statusCode() != 200 && r.statusCode() != 404) {
        throw fail("DELETE", l.bucket, l.key, r);
      }
    }

    List<FileInfo> list(String prefix) {
      Loc l = new Loc(prefix);
      List<FileInfo> out = new ArrayList<>();
      String scheme = prefix.substring(0, prefix.indexOf("://"));
      String token = null;
      do {
        Map<String, String> q = new HashMap<>();
        q.put("list-type", "2");
        q.put("prefix", l.key);
        if (token != null) q.put("continuation-token", token);
        HttpResponse<byte[]> r = send("GET", l.bucket, "", q, Map.of(), null, null,
            EMPTY_SHA256);
        if (r.statusCode() != 200) throw fail("LIST", l.bucket, l.key, r);
        try {
          DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
          f.setNamespaceAware(false);
          f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
          Document doc = f.newDocumentBuilder().parse(new ByteArrayInputStream(r.body()));
          NodeList contents = doc.getElementsByTagName("Contents");
          for (int i = 0; i < contents.getLength(); i++) {
            Element c = (Element) contents.item(i);
            String key = text(c, "Key");
            long size = Long.parseLong(text(c, "Size"));
            String modified = text(c, "LastModified");
            long at = modified == null ? 0L : Instant.parse(modified).toEpochMilli();
            out.add(new FileInfo(scheme + "://" + l.bucket + "/" + key, size, at));
          }
          String truncated = text(doc.getDocumentElement(), "IsTruncated");
          token = "true".equals(truncated)
              ? text(doc.getDocumentElement(), "NextContinuationToken") : null;
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        } catch (Exception e) {
          throw new UncheckedIOException(new IOException("LIST " + prefix + ": " + e, e));
        }
      } while (token != null);
      return out;
    }

    static String text(Element parent, String tag) {
      NodeList n = parent.getElementsByTagName(tag);
      return n.getLength() == 0 ? null : n.item(0).getTextContent();
    }
  }

  // ---------------------------------------------------------------------------------------

  static final class In implements InputFile {
    final Client c;
    final String location;
    long length;

    In(Client c, String location, long length) {
      this.c = c;
      this.location = location;
      this.length = length;
    }

    @Override
    public long getLength() {
      if (length < 0) length = c.length(location);
      return length;
    }

    @Override
    public SeekableInputStream newStream() {
      return new Stream(c, location, getLength());
    }

    @Override
    public String location() {
      return location;
    }

    @Override
    public boolean exists() {
      return c.exists(location);
    }
  }

  static final class Stream extends SeekableInputStream implements RangeReadable {
    final Client c;
    final String location;
    final long length;
    long pos;
    byte[] buf = new byte[0];
    long bufStart;
    boolean closed;

    Stream(Client c, String location, long length) {
      this.c = c;
      this.location = location;
      this.length = length;
    }

    void open() throws IOException {
      if (closed) throw new IOException("stream closed: " + location);
    }

    @Override
    public long getPos() {
      return pos;
    }

    @Override
    public void seek(long newPos) throws IOException {
      open();
      if (newPos < 0) throw new IOException("negative seek in " + location);
      pos = newPos;
    }

    boolean buffered(long p) {
      return p >= bufStart && p < bufStart + buf.length;
    }

    void fill() {
      int n = (int) Math.min(CHUNK, length - pos);
      buf = c.range(location, pos, n);
      bufStart = pos;
    }

    @Override
    public int read() throws IOException {
      open();
      if (pos >= length) return -1;
      if (!buffered(pos)) fill();
      return buf[(int) (pos++ - bufStart)] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      open();
      if (len == 0) return 0;
      if (pos >= length) return -1;
      int n = (int) Math.min(len, length - pos);
      if (!buffered(pos)) {
        if (n >= CHUNK) { // a big read: straight into the caller's buffer
          byte[] got = c.range(location, pos, n);
          System.arraycopy(got, 0, b, off, n);
          pos += n;
          return n;
        }
        fill();
      }
      n = (int) Math.min(n, bufStart + buf.length - pos);
      System.arraycopy(buf, (int) (pos - bufStart), b, off, n);
      pos += n;
      return n;
    }

    @Override
    public long skip(long n) throws IOException {
      open();
      long k = Math.max(0, Math.min(n, length - pos));
      pos += k;
      return k;
    }

    @Override
    public int available() {
      return (int) Math.min(Integer.MAX_VALUE, Math.max(0, bufStart + buf.length - pos));
    }

    @Override
    public void readFully(long position, byte[] b, int off, int len) throws IOException {
      open();
      if (len == 0) return;
      if (position < 0 || position + len > length) {
        throw new java.io.EOFException("read past the end of " + location);
      }
      byte[] got = c.range(location, position, len);
      System.arraycopy(got, 0, b, off, len);
    }

    @Override
    public int readTail(byte[] b, int off, int len) throws IOException {
      int n = (int) Math.min(len, length);
      readFully(length - n, b, off, n);
      return n;
    }

    @Override
    public void close() {
      closed = true;
      buf = new byte[0];
    }
  }

  static final class Out implements OutputFile {
    final Client c;
    final String location;

    Out(Client c, String location) {
      this.c = c;
      this.location = location;
    }

    @Override
    public PositionOutputStream create() {
      if (c.exists(location)) {
        throw new AlreadyExistsException("Location already exists: %s", location);
      }
      return createOrOverwrite();
    }

    @Override
    public PositionOutputStream createOrOverwrite() {
      try {
        return new Upload(c, location);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public String location() {
      return location;
    }

    @Override
    public InputFile toInputFile() {
      return new In(c, location, -1);
    }
  }

  /** Bytes go to a local temporary file, hashed as they come; close() uploads them. */
  static final class Upload extends PositionOutputStream {
    final Client c;
    final String location;
    final File tmp;
    final OutputStream out;
    final MessageDigest sha;
    long pos;
    boolean closed;

    Upload(Client c, String location) throws IOException {
      this.c = c;
      this.location = location;
      tmp = File.createTempFile("binlake-s3-", ".part");
      tmp.deleteOnExit();
      out = new java.io.BufferedOutputStream(new FileOutputStream(tmp), 1 << 16);
      try {
        sha = MessageDigest.getInstance("SHA-256");
      } catch (Exception e) {
        throw new IOException(e);
      }
    }

    @Override
    public long getPos() {
      return pos;
    }

    @Override
    public void write(int b) throws IOException {
      out.write(b);
      sha.update((byte) b);
      pos++;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len);
      sha.update(b, off, len);
      pos += len;
    }

    @Override
    public void close() throws IOException {
      if (closed) return;
      closed = true;
      try {
        out.close();
        if (pos > MAX_PUT) {
          throw new IOException(location + ": " + pos + " bytes, over one PUT's 5 GiB");
        }
        c.put(location, tmp, hex(sha.digest()));
      } catch (UncheckedIOException e) {
        throw e.getCause();
      } finally {
        Files.deleteIfExists(tmp.toPath());
      }
    }
  }

  // ---------------------------------------------------------------------------------------

  static String encode(String s, boolean keepSlash) {
    StringBuilder sb = new StringBuilder();
    for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
      int ch = b & 0xff;
      if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')
          || ch == '-' || ch == '_' || ch == '.' || ch == '~' || (keepSlash && ch == '/')) {
        sb.append((char) ch);
      } else {
        sb.append('%').append(Character.toUpperCase(Character.forDigit(ch >> 4, 16)))
            .append(Character.toUpperCase(Character.forDigit(ch & 15, 16)));
      }
    }
    return sb.toString();
  }

  static byte[] sha256(byte[] data) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(data);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  static byte[] hmac(byte[] key, String data) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (byte x : b) sb.append(Character.forDigit((x >> 4) & 15, 16)).append(
        Character.forDigit(x & 15, 16));
    return sb.toString();
  }
}
