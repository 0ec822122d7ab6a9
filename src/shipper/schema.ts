/**
 * The Parquet schema of the shipped bid log and the SQL that fills it (DuckDB). One row per NDJSON
 * record; the columns a report needs are extracted, `raw` keeps the whole line for everything else.
 * docs/log-pipeline.md lists the columns. Records are read by DuckDB itself from the staged zstd
 * frames (no JSON parsing in JavaScript); fields that are missing or of another type become NULL.
 */

/** Key of the wrapper object a line that is not JSON is staged in (the slow path, see ParquetStore). */
export const INVALID_LINE_KEY = '__invalid_line';

/** The fields read from each record, as DuckDB's json_transform types them (lenient: a mismatch is NULL). */
const STRUCTURE = JSON.stringify({
  ts: 'DOUBLE',
  type: 'VARCHAR',
  host: 'VARCHAR',
  worker: 'VARCHAR',
  id: 'VARCHAR',
  name: 'VARCHAR',
  status: 'INTEGER',
  reason: 'VARCHAR',
  ms: 'DOUBLE',
  privacy: 'JSON',
  req: { imp: [{ banner: 'JSON', video: 'JSON', audio: 'JSON', native: 'JSON' }] },
  res: {
    cur: 'VARCHAR',
    seatbid: [{ bid: [{ id: 'VARCHAR', impid: 'VARCHAR', price: 'DOUBLE', cid: 'VARCHAR', crid: 'VARCHAR', dealid: 'VARCHAR', mtype: 'INTEGER' }] }],
  },
  bid: 'VARCHAR',
  imp: 'VARCHAR',
  crid: 'VARCHAR',
  cid: 'VARCHAR',
  price: 'DOUBLE',
  bidPrice: 'DOUBLE',
  cur: 'VARCHAR',
  deal: 'VARCHAR',
  bidTs: 'DOUBLE',
  loss: 'INTEGER',
  counted: 'BOOLEAN',
  landing: 'VARCHAR',
  user: 'VARCHAR',
  [INVALID_LINE_KEY]: 'VARCHAR',
});

/**
 * Longest record DuckDB reads on the fast path (its read buffer is twice this). A request record
 * holds the request body, bounded by the bidder's BODY_LIMIT_BYTES (1 MiB by default); a batch with
 * a longer record takes the slow path, which raises the bound to its longest line.
 */
export const MAX_RECORD_BYTES = 16 * 1024 * 1024;

/** Valid epoch milliseconds (years 1970 to 9999); anything else is no timestamp. */
const MAX_TS = 253_402_300_799_999;

export function sqlString(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

/**
 * Creates the temporary table `batch` from the staged files (`<frame hash>.ndjson[.zst]`): the
 * Parquet columns plus `p_date` / `p_hour`, the UTC hour partition. A record without a valid `ts`
 * goes to the hour of its frame's earliest record (1970-01-01 00 when the frame has none), so the
 * same frames always give the same partitions.
 */
export function loadBatchSql(files: readonly string[], maxRecordBytes: number = MAX_RECORD_BYTES): string {
  return `
CREATE OR REPLACE TEMP TABLE batch AS
WITH src AS (
  SELECT regexp_extract(filename, '([0-9a-f]{32})\\.ndjson', 1) AS frame, json AS j
  FROM read_ndjson_objects([${files.map(sqlString).join(', ')}], filename = true, maximum_object_size = ${Math.max(MAX_RECORD_BYTES, Math.ceil(maxRecordBytes))})
), t AS (
  SELECT frame, j, json_transform(j, ${sqlString(STRUCTURE)}) AS r FROM src
), f AS (
  SELECT frame, j, r,
    CASE WHEN r.ts >= 0 AND r.ts <= ${MAX_TS} THEN CAST(r.ts AS BIGINT) END AS ts_ms,
    flatten([s.bid FOR s IN r.res.seatbid IF s.bid IS NOT NULL]) AS bids
  FROM t
), g AS (
  SELECT *, coalesce(ts_ms, min(ts_ms) OVER (PARTITION BY frame), 0) AS part_ms FROM f
)
SELECT
  epoch_ms(ts_ms) AS ts,
  r.type AS type,
  r.host AS host,
  r.worker AS worker,
  r.id AS id,
  r.name AS name,
  r.status AS status,
  r.reason AS reason,
  r.ms AS ms,
  len(r.req.imp) AS imps,
  CASE
    WHEN r.req.imp IS NOT NULL THEN list_filter([
      CASE WHEN list_bool_or([i.banner IS NOT NULL FOR i IN r.req.imp]) THEN 'banner' END,
      CASE WHEN list_bool_or([i.video IS NOT NULL FOR i IN r.req.imp]) THEN 'video' END,
      CASE WHEN list_bool_or([i.audio IS NOT NULL FOR i IN r.req.imp]) THEN 'audio' END,
      CASE WHEN list_bool_or([i.native IS NOT NULL FOR i IN r.req.imp]) THEN 'native' END], x -> x IS NOT NULL)
    WHEN bids IS NOT NULL THEN list_sort(list_distinct([CASE b.mtype WHEN 1 THEN 'banner' WHEN 2 THEN 'video' WHEN 3 THEN 'audio' WHEN 4 THEN 'native' END FOR b IN bids IF b.mtype BETWEEN 1 AND 4]))
  END AS media,
  len(bids) AS bids,
  [b.id FOR b IN bids] AS bid_ids,
  [b.impid FOR b IN bids] AS imp_ids,
  [b.price FOR b IN bids] AS prices,
  [b.cid FOR b IN bids] AS cids,
  [b.crid FOR b IN bids] AS crids,
  [b.dealid FOR b IN bids IF b.dealid IS NOT NULL] AS deals,
  coalesce(r.res.cur, r.cur) AS cur,
  CAST(r.privacy AS VARCHAR) AS privacy,
  r.bid AS bid,
  r.imp AS imp,
  r.crid AS crid,
  r.cid AS cid,
  r.price AS price,
  r.bidPrice AS bid_price,
  r.deal AS deal,
  CASE WHEN r.bidTs >= 0 AND r.bidTs <= ${MAX_TS} THEN epoch_ms(CAST(r.bidTs AS BIGINT)) END AS bid_ts,
  r.loss AS loss,
  r.counted AS counted,
  r.landing AS landing,
  r.user AS user_id,
  frame,
  coalesce(r.${INVALID_LINE_KEY}, CAST(j AS VARCHAR)) AS raw,
  strftime(epoch_ms(part_ms), '%Y-%m-%d') AS p_date,
  strftime(epoch_ms(part_ms), '%H') AS p_hour
FROM g`;
}

/** The hours of the loaded batch and their record counts. */
export const BATCH_HOURS_SQL = 'SELECT p_date, p_hour, count(*) AS n FROM batch GROUP BY ALL ORDER BY ALL';

/**
 * Rows per Parquet row group: the writer holds one row group in memory, so this bounds its memory
 * (~300 MB less at the peak of a 78k-record batch than DuckDB's default of 122,880 rows, bench/RESULTS-ship.md).
 */
const ROW_GROUP_ROWS = 32_768;

/** Writes one hour of the batch to `file` as Parquet (zstd), records grouped by type then time (similar rows compress better). */
export function copyHourSql(date: string, hour: string, file: string): string {
  return `COPY (SELECT * EXCLUDE (p_date, p_hour) FROM batch WHERE p_date = ${sqlString(date)} AND p_hour = ${sqlString(hour)} ORDER BY type, ts)
TO ${sqlString(file)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${ROW_GROUP_ROWS})`;
}
