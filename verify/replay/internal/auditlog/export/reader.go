package export

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// record is one audit event an envelope holds, or why a record of it holds none.
type record struct {
	// data is the audit.k8s.io/v1 Event, JSON, owned by the record; or, while unwrap is set,
	// the envelope's record that holds it.
	data []byte
	// line is where the record begins in the file; item its place among the records that
	// begin there (see auditlog.Line.Item).
	line, item int
	// err says where in the record and in which field it is wrong; a *auditlog.ReadError
	// when the file stops being readable.
	err error
	// loss is what the envelope does not carry of the event.
	loss auditlog.Loss
	// at is the event's stageTimestamp, the zero time when it has none.
	at time.Time
	// dry is what tells whether a GKE entry's request was a dry run, in the server's order
	// (see dryRuns).
	dry *dryCheck
	// unwrap, when set, makes the record from the envelope's record in data: the Reader
	// runs it on its workers, in parallel, as the replay decodes events.
	unwrap func(*record)
	// piece, when set, says the event is a line AKS may have cut (see joiner): the Reader
	// joins the pieces, in the file's order, after unwrap.
	piece *pieceOf
	// where names a GKE entry still to unwrap, for the reverser, which holds records on
	// disk (its unwrap is the reverser's: gkeUnwrap(where), laUnwrap(where)).
	where string
	// skip, when set, says the record holds no audit event of the cluster's servers, and
	// why: it is counted, not replayed (auditlog.Line.Skip).
	skip string
	// dup says the event is one handed over already, delivered again later than the reorder
	// window (see reorder).
	dup bool
	// field is where the envelope's record holds the event (auditlog.Line.Field).
	field string
	// sum, where summed, is the hash of data (eventSum), which the reorder takes as it
	// hands the record over, and AKS's copies reuse.
	sum    uint64
	summed bool
	// table, where set, is the Log Analytics table of AKS's the event's row is of (laTables),
	// which serializes the event's objects as its dynamic columns hold them: see copies.
	table uint8
}

// eventSum is the hash of an event's bytes within one run (the reorder's and AKS's copies').
func (rec *record) eventSum() uint64 {
	if !rec.summed {
		rec.sum, rec.summed = maphash.Bytes(eventSeed, rec.data), true
	}
	return rec.sum
}

// eventSeed seeds the hashes of events: they are compared within one run only.
var eventSeed = maphash.MakeSeed()

// input is what a format reads: the decompressed file, with its name and the longest record
// a replay reads.
type input struct {
	file    string
	r       *bufio.Reader
	maxLine int
	// at reads the input again, at base: a regular file, not compressed (see entryFile).
	at   io.ReaderAt
	base int64
	// arrays, when set, keeps what a reader of the file found for the readers of it after
	// this one (see Arrays); id is what the file says it is, set with it.
	arrays *Arrays
	id     os.FileInfo
	// passOver, for a Reader given a Filter, says whether a record's bytes show that its
	// event does not hold the filter (Reader.passOver), lacks that bytes do not hold it;
	// nil without one.
	passOver, lacks func([]byte) bool
}

// scanner is a scanner of the input for a format whose records the scanner may pass over
// before it keeps them (scanner.passOver): not one that reads each record's time, as the
// readers of arrays do to tell their order (readArray).
func (in input) scanner() *scanner {
	s := newScanner(in.r)
	s.passOver, s.lacks = in.passOver, in.lacks
	return s
}

// A format's reader yields the records of a file in the file's order.
type formatReader func(in input, yield func(record) bool)

var readers = map[Format]formatReader{
	Webhook:           readWebhook,
	CloudWatch:        readCloudWatch,
	CloudWatchS3:      readCloudWatchS3,
	Firehose:          readFirehose,
	AzureBlob:         readAzureBlob,
	AzureEventHub:     readAzureEventHub,
	AzureLogAnalytics: readAzureLogAnalytics,
	GKE:               readGKE,
}

// Reader reads the audit events of one file in any format as the lines of a log backend's
// file: each line one audit.k8s.io/v1 Event, in the order the server completed them (an
// envelope's records are put back in that order within a bounded window: see reorder), with
// the line of the record it was read from and what the envelope lost of it. A format's reader
// finds the records of the file on one goroutine; what it leaves to unwrap (the decoding of a
// record's event) runs on as many workers as there are CPUs, as the replay's decoding does;
// the Reader joins AKS's pieces, reorders and hands the lines over in the file's order.
type Reader struct {
	format Format
	plain  *auditlog.Reader
	file   string
	closer []io.Closer
	line   []byte
	dry    *dryRuns
	order  *reorder
	join   *joiner
	// seen, for AKS, finds the events read already (see copies).
	seen *copies
	// filter, when set, passes over the records that do not hold it (Filter).
	filter []byte
	// ordered are the batches of records in the file's order; cur the one being handed
	// over, at next.
	ordered chan *recordBatch
	quit    chan struct{}
	cur     *recordBatch
	next    int
	ended   bool
	wg      sync.WaitGroup
	// items are how many records began on each of the last lines (itemOf), itemLines those
	// lines, the oldest first.
	items     map[int]int
	itemLines []int
}

// maxItemLines bounds the lines whose records itemOf counts: a record the joiner completes
// comes out after those of the lines its pieces spanned, never thousands of lines later.
const maxItemLines = 4096

// recordBatch is a run of records unwrapped together by one worker.
type recordBatch struct {
	recs []record
	done chan struct{}
}

// batches recycles the record slices of batches handed over.
var batches = sync.Pool{New: func() any { return make([]record, 0, batchRecords) }}

// newBatch is an empty batch.
func newBatch() *recordBatch {
	return &recordBatch{recs: batches.Get().([]record)[:0], done: make(chan struct{})}
}

const (
	// batchRecords is how many records a worker unwraps at once.
	batchRecords = 128
	// batchBytes bounds the bytes of a batch.
	batchBytes = 4 << 20
)

// NewReader returns a Reader of the file named file that r reads, plain or gzip-compressed
// (twice, as Firehose writes a subscription's gzip records into a gzip object), in the given
// format (Auto detects it from the file's first bytes), with records of at most maxLine
// bytes.
func NewReader(file string, r io.Reader, format Format, maxLine int, opts ...Option) (*Reader, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return newReader(file, r, format, maxLine, o)
}

// An Option is what a Reader may be given beyond its file (Filter, Sharing).
type Option func(*options)

type options struct {
	filter []byte
	arrays *Arrays
}

// Filter makes the Reader one that wants only the events whose lines hold filter (bytes a
// JSON string holds as they are, such as a resource's name): a record of an envelope whose
// bytes do not hold it is passed over, neither decoded nor handed over, as a log backend's
// file's lines are searched (source's grepReader); a line of records whose bytes do not hold
// it, where the format's lines can be, unread (scanner.lineDocuments). AKS's records, which may
// hold a piece of an event, are decoded but where they hold an event whole (azureWhole); a
// record decoded to tell is handed over skipped (auditlog.Line.Skip, Filtered).
func Filter(filter []byte) Option { return func(o *options) { o.filter = filter } }

// Sharing makes the Reader one of the readers of arrays: what one of them found of a file,
// the others read it by (see Arrays).
func Sharing(arrays *Arrays) Option { return func(o *options) { o.arrays = arrays } }

// Filtered is the Skip of a line a Reader given a Filter decoded, to find it does not hold
// the filter.
const Filtered = "filtered"

// Decompressed reads r decompressed: as it is, or gzip-compressed (twice at most, as Firehose
// writes a subscription's gzip records into a gzip object), detected by its first bytes; the
// closers end the decompression.
func Decompressed(r io.Reader) (*bufio.Reader, []io.Closer, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var closers []io.Closer
	for layer := range 2 {
		magic, err := br.Peek(2)
		if err != nil || magic[0] != 0x1f || magic[1] != 0x8b {
			break
		}
		if layer == 1 {
			// The outer layer decompresses on a goroutine of its own (layerAhead), which
			// closes it.
			ahead := newLayerAhead(readCloser{br, closers[0]})
			closers[0] = ahead
			br = bufio.NewReaderSize(ahead, 256<<10)
		}
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, closers, err
		}
		closers = append(closers, zr)
		br = bufio.NewReaderSize(zr, 256<<10)
	}
	return br, closers, nil
}

// readCloser reads with one and closes with the other.
type readCloser struct {
	io.Reader
	io.Closer
}

// FormatOf is the format of the file named file that r reads (format, when it is not Auto,
// as NewReader takes it), read from its first bytes as NewReader reads them, and the error
// NewReader would return for it; it reads no more of r than that and starts nothing.
func FormatOf(file string, r io.Reader, format Format) (Format, error) {
	br, closers, err := Decompressed(r)
	for _, c := range closers {
		defer c.Close()
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	format, _, err = detected(file, br, format)
	return format, err
}

// detected is the format of the file that br reads decompressed (format, when it is not Auto,
// as it is given), and how many bytes of a byte order mark begin it; an error for a file vapc
// does not read.
func detected(file string, br *bufio.Reader, format Format) (_ Format, bom int, _ error) {
	switch mark, _ := br.Peek(3); {
	case bytes.HasPrefix(mark, []byte("\ufeff")):
		// A UTF-8 byte order mark (PowerShell 7's, Notepad's): not the log's.
		bom = 3
	case bytes.HasPrefix(mark, []byte{0xff, 0xfe}) || bytes.HasPrefix(mark, []byte{0xfe, 0xff}):
		return "", 0, &auditlog.ConvertError{Err: fmt.Errorf("%s: UTF-16 text (byte order mark %X), not UTF-8: convert it (iconv -f UTF-16 -t UTF-8 %s; Windows PowerShell 5.1's > writes UTF-16, Out-File -Encoding utf8 does not)", file, mark[:2], file)}
	}
	head, _ := br.Peek(bom + detectBytes)
	head = head[bom:]
	if a := archiveOf(head); a != nil {
		return "", 0, &auditlog.ConvertError{Err: fmt.Errorf("%s: %s, which vapc does not read (it reads gzip): %s", file, a.what, a.fix)}
	}
	if bigQueryRows(head) {
		return "", 0, &auditlog.ConvertError{Err: fmt.Errorf("%s: GKE's audit log as BigQuery's rows (protopayload_auditlog, a log sink to BigQuery), which vapc does not read: their columns rename the entries' members and labels; read the entries from Cloud Logging (gcloud logging read --format=json) or a log sink to Cloud Storage", file)}
	}
	switch {
	case format == Auto || format == "":
		// In an object Firehose named, what is not its raw records is the messages it
		// extracted, whichever stream's comes first.
		if format = detect(head); (format == Plain || format == concatenatedEvents) && firehoseObject(file) {
			format = concatenatedEvents
		}
	case coloredText(trimHead(head)):
		// Whatever the format given, its text is not there to read.
		format = colored
	case format == AzureLogAnalytics && azureCLI(trimHead(head)) != "":
		format = azureCLI(trimHead(head))
	case csvRefused(format, trimHead(head)) != "":
		format = csvRefused(format, trimHead(head))
	case format == Firehose && detect(head) != Firehose:
		format = concatenatedEvents
	case format == AzureBlob && detect(head) == azureDocuments:
		format = azureDocuments
	case format == CloudWatch && slices.Contains([]Format{insightsResults, insightsCSV, cloudWatchText}, detect(head)):
		// What eks-cloudwatch reads besides filter-log-events' JSON.
		format = detect(head)
	}
	switch format {
	case legacyFormat:
		return "", 0, &auditlog.ConvertError{Err: fmt.Errorf("%s: kube-apiserver's legacy audit log format (--audit-log-format=legacy), which holds no objects, annotations or audit levels to replay: log in the json format (--audit-log-format=json, the default)", file)}
	case gkeYAML:
		return "", 0, &auditlog.ConvertError{Err: fmt.Errorf("%s: gcloud logging read's YAML, which vapc does not read: print the entries as JSON (gcloud logging read --format=json)", file)}
	case awsYAML, awsTable:
		return "", 0, &auditlog.ConvertError{Err: fmt.Errorf("%s: the AWS CLI's %s output of log events, which vapc does not read: print them as JSON (--output json) or text (--output text)", file, map[Format]string{awsYAML: "YAML", awsTable: "table"}[format])}
	case azYAML, azTable, azTSV:
		return "", 0, &auditlog.ConvertError{Err: fmt.Errorf("%s: the Azure CLI's %s output of a Log Analytics query, which vapc does not read: print the rows as JSON (az monitor log-analytics query ... --output json)", file, map[Format]string{azYAML: "YAML", azTable: "table", azTSV: "TSV"}[format])}
	case laCSV:
		return "", 0, &auditlog.ConvertError{Err: fmt.Errorf("%s: a Log Analytics query's rows as CSV (the Azure portal's Export to CSV), which vapc does not read: print the rows as JSON (az monitor log-analytics query --workspace WORKSPACE_ID --analytics-query QUERY --output json)", file)}
	case gkeCSV:
		return "", 0, &auditlog.ConvertError{Err: fmt.Errorf("%s: Cloud Logging's entries as CSV (the Logs Explorer's download, gcloud logging read --format=csv), which vapc does not read: its columns flatten each entry; print the entries as JSON (gcloud logging read --format=json, or the Logs Explorer's download as JSON)", file)}
	case colored:
		return "", 0, &auditlog.ConvertError{Err: fmt.Errorf("%s: holds a terminal's colour codes (az --output jsonc, jq -C, a log copied out of a terminal), which vapc does not read: write it without them (az --output json, jq -M)", file)}
	case kubectlPrefix:
		return "", 0, &auditlog.ConvertError{Err: fmt.Errorf("%s: kubectl logs --prefix's lines, each after the pod and container it came from, which vapc does not read: print each kube-apiserver's log without --prefix to a file of its own (kubectl logs -n kube-system POD > POD.log) and give the files", file)}
	}
	return format, bom, nil
}

// archive is a compressed or archived file's kind, known by its first bytes, and how to
// read it.
type archive struct {
	magic     []byte
	next      string // the bytes that may follow the magic, when only some may
	what, fix string
}

// archives are the compressions and archives an audit log may come in that vapc does not read:
// a zip archive (Firehose's ZIP compression, a portal's download), bzip2, xz, zstd, Snappy's
// framing format (Firehose's Snappy and Hadoop-compatible Snappy are raw blocks, not known by
// their bytes) and tar.
var archives = []archive{
	{[]byte("PK\x03\x04"), "", "a zip archive", "unzip it and give vapc its files"},
	{[]byte("BZh"), "123456789", "bzip2-compressed", "bunzip2 it"}, // a block size follows
	{[]byte("\xfd7zXZ\x00"), "", "xz-compressed", "unxz it"},
	{[]byte("\x28\xb5\x2f\xfd"), "", "zstd-compressed", "zstd -d it"},
	{[]byte("\xff\x06\x00\x00sNaPpY"), "", "Snappy-compressed (framing format)", "decompress it"},
	{[]byte("Obj\x01"), "", "an Avro container file (Event Hubs Capture writes one)", "read its records' Body, each an Event Hubs message ({\"records\":[...]}), one a line (avro-tools tojson, then each Body's text), or give vapc the messages as Event Hubs delivers them"},
	{[]byte("PAR1"), "", "a Parquet file (a Firehose record format conversion, a BigQuery or Athena export)", "export the audit log's events or the export's records as JSON"},
}

// bigQueryRows says whether a file begins with the rows of a BigQuery table of Cloud Audit
// Logs (a log sink to BigQuery: the payload is the column protopayload_auditlog,
// https://cloud.google.com/logging/docs/export/bigquery), as bq or the console exports
// them: in its first object, before an event's or an entry's own member names it.
func bigQueryRows(head []byte) bool {
	i := bytes.Index(head, []byte(`"protopayload_auditlog"`))
	return i >= 0 && !bytes.Contains(head[:i], []byte(`"protoPayload"`)) && !bytes.Contains(head[:i], []byte(`"kind":"Event"`)) && !bytes.Contains(head[:i], []byte(`"auditID"`))
}

// archiveOf is the archive the head of a file says it is; nil for text.
func archiveOf(head []byte) *archive {
	for i, a := range archives {
		if bytes.HasPrefix(head, a.magic) && (a.next == "" || len(head) > len(a.magic) && strings.IndexByte(a.next, head[len(a.magic)]) >= 0) {
			return &archives[i]
		}
	}
	// A tar archive: "ustar" at offset 257.
	if len(head) >= 262 && string(head[257:262]) == "ustar" {
		return &archive{what: "a tar archive", fix: "extract it (tar xf) and give vapc its files"}
	}
	return nil
}

func newReader(file string, r io.Reader, format Format, maxLine int, opts options) (*Reader, error) {
	rd := &Reader{file: file}
	at, base := readerAt(r)
	br, closers, err := Decompressed(r)
	rd.closer = closers
	if err != nil {
		rd.Close()
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	format, bom, err := detected(file, br, format)
	if err != nil {
		rd.Close()
		return nil, err
	}
	br.Discard(bom)
	base += int64(bom)
	rd.format = format
	if format == Plain {
		lr, c, err := auditlog.NewReader(file, br, maxLine)
		if err != nil {
			rd.Close()
			return nil, err
		}
		if c != nil {
			rd.closer = append(rd.closer, c)
		}
		rd.plain = lr
		return rd, nil
	}
	read, ok := readers[format]
	if !ok {
		rd.Close()
		return nil, fmt.Errorf("%s: unknown input format %q", file, format)
	}
	in := input{file: file, r: br, maxLine: maxLine, base: base}
	if len(rd.closer) == 0 && at != nil {
		in.at = at
	}
	if opts.arrays != nil {
		if id := fileInfo(r); id != nil {
			in.arrays, in.id = opts.arrays, id
		}
	}
	rd.order = newReorder(file, defaultWindow, maxLine)
	rd.dry = newDryRuns()
	rd.join = newJoiner(maxLine)
	rd.filter = opts.filter
	if rd.filter != nil {
		in.passOver, in.lacks = rd.passOver, rd.lacks
	}
	if !format.Filterable() {
		rd.seen = newCopies(defaultWindow)
	}
	rd.start(func(yield func(record) bool) { read(in, yield) })
	return rd, nil
}

// ErrInternal is an error of vapc's own, not of the file: a record it failed to read (a
// panic of its reader, which runs on a goroutine of its own, recovered) is this error, named
// by file and line, and the rest of the file is read. Please report it.
var ErrInternal = errors.New("an internal error of vapc (please report it)")

// passOver says whether a record's bytes, before they are unwrapped, show that its event does
// not hold the filter: they do not hold it, and they hold an event whole (an AKS record may
// hold a piece of one, which another piece completes: those are unwrapped and joined, and
// the event they make filtered whole in toLine).
func (r *Reader) passOver(data []byte) bool {
	if !r.lacks(data) {
		return false
	}
	switch r.format {
	case AzureBlob, azureDocuments, AzureEventHub:
		return azureWhole(data)
	}
	return r.format.Filterable()
}

// lacks says whether bytes do not hold the filter.
func (r *Reader) lacks(b []byte) bool { return !bytes.Contains(b, r.filter) }

// unwrapRecord runs u on rec; a panic of u makes rec the error that says so.
func unwrapRecord(rec *record, u func(*record)) {
	defer func() {
		if p := recover(); p != nil {
			*rec = record{line: rec.line, err: fmt.Errorf("%w: %v", ErrInternal, p)}
		}
	}()
	u(rec)
}

// readerAt is r as an io.ReaderAt, and where r is in it, when it is one that can seek (a
// regular file, not standard input or a pipe); nil otherwise.
func readerAt(r io.Reader) (io.ReaderAt, int64) {
	at, ok := r.(io.ReaderAt)
	sk, ok2 := r.(io.Seeker)
	if !ok || !ok2 {
		return nil, 0
	}
	base, err := sk.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, 0
	}
	return at, base
}

// start runs the format's reader and the workers that unwrap its records.
func (r *Reader) start(read func(yield func(record) bool)) {
	workers := runtime.GOMAXPROCS(0)
	work := make(chan *recordBatch, workers)
	r.ordered = make(chan *recordBatch, 2*workers)
	// The goroutines hold quit itself: Close sets r.quit to nil once it has closed it, and a
	// receive from a nil channel blocks, which made a reader closed early read its whole file.
	quit := make(chan struct{})
	r.quit = quit
	for range workers {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for b := range work {
				for i := range b.recs {
					if u := b.recs[i].unwrap; u != nil {
						b.recs[i].unwrap = nil
						if r.filter != nil && len(b.recs[i].data) > 0 && r.passOver(b.recs[i].data) {
							// Its bytes go back at once: a record passed over has no time,
							// and the reorder holds it among those read around it, which a
							// search's Filter passes over all of (gcloud's array, newest
							// first, read back for the policies' names held 150 MB of them).
							b.recs[i].skip = Filtered
							putBuf(b.recs[i].data)
							b.recs[i].data = nil
							continue
						}
						unwrapRecord(&b.recs[i], u)
					}
					if rec := &b.recs[i]; rec.err == nil && rec.skip == "" && (rec.piece == nil || rec.piece.whole && rec.piece.event) && len(rec.data) > 0 {
						// The hash the reorder takes of it as it hands it over, taken here,
						// in parallel, not on the replay's path (an AKS piece's bytes change
						// as the joiner joins it: hashed there; an AKS event whole is handed
						// over as it is, but where aksEvent rewrites it).
						rec.eventSum()
					}
				}
				close(b.done)
			}
		}()
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(r.ordered)
		defer close(work)
		cur := newBatch()
		size := 0
		send := func() bool {
			select {
			case r.ordered <- cur:
			case <-quit:
				return false
			}
			select {
			case work <- cur:
			case <-quit:
				close(cur.done)
				return false
			}
			cur, size = newBatch(), 0
			return true
		}
		stopped, last := false, 0
		func() {
			defer func() {
				if p := recover(); p != nil {
					// The format's reader failed: the file ends here, saying so (not the
					// process: it runs on its own goroutine).
					cur.recs = append(cur.recs, record{line: last + 1, err: &auditlog.ReadError{Err: fmt.Errorf("reading stopped: %w: %v", ErrInternal, p)}})
				}
			}()
			read(func(rec record) bool {
				cur.recs = append(cur.recs, rec)
				size += len(rec.data)
				last = max(last, rec.line)
				if len(cur.recs) >= batchRecords || size >= batchBytes {
					stopped = !send()
				}
				return !stopped
			})
		}()
		if !stopped && len(cur.recs) > 0 {
			send()
		}
	}()
}

// Format is the format the Reader reads: the one given, or the one detected.
func (r *Reader) Format() Format { return r.format }

// Next returns the next line; ok is false at the end. A line's data is valid until the next
// call.
func (r *Reader) Next() (l auditlog.Line, ok bool) {
	if r.plain != nil {
		return r.plain.Next()
	}
	for {
		if rec, ok := r.order.pop(); ok {
			return r.toLine(rec), true
		}
		if r.ended {
			return auditlog.Line{}, false
		}
		rec, ok := r.nextRecord()
		if !ok {
			r.ended = true
			r.join.flush(r.pushNumbered)
			r.order.drain()
			continue
		}
		if rec.piece != nil && rec.err == nil {
			r.join.add(rec, r.pushNumbered)
			continue
		}
		if _, stopped := rec.err.(*auditlog.ReadError); stopped {
			// The file ends here: the pieces held are cut before it.
			r.join.flush(r.pushNumbered)
		}
		r.itemOf(&rec)
		if rec.skip == Filtered {
			// Passed over (numbered: the others of its line keep their items): a search
			// wants the lines that hold its filter, as a log backend's file's are handed over
			// (source's grepReader), not a line for each record of a day's export.
			continue
		}
		r.order.push(rec)
	}
}

// nextRecord is the next record of the file, unwrapped.
func (r *Reader) nextRecord() (record, bool) {
	for r.cur == nil || r.next == len(r.cur.recs) {
		if r.cur != nil && cap(r.cur.recs) == batchRecords {
			batches.Put(r.cur.recs) // handed over: each record cleared
			r.cur = nil
		}
		b, ok := <-r.ordered
		if !ok {
			return record{}, false
		}
		<-b.done
		r.cur, r.next = b, 0
	}
	rec := r.cur.recs[r.next]
	r.cur.recs[r.next] = record{}
	r.next++
	return rec, true
}

// itemOf numbers the record among those that begin on its line, in the file's order: the
// replay tells the events of one line apart by it.
func (r *Reader) itemOf(rec *record) {
	if r.items == nil {
		r.items = map[int]int{}
	}
	n, seen := r.items[rec.line]
	if !seen {
		r.itemLines = append(r.itemLines, rec.line)
		if len(r.itemLines) > maxItemLines {
			delete(r.items, r.itemLines[0])
			r.itemLines = r.itemLines[1:]
		}
	}
	r.items[rec.line] = n + 1
	rec.item = n + 1
}

// pushNumbered numbers a record the joiner gives (itemOf) and queues it: an AKS record's
// events, which the joiner passes, share their line.
func (r *Reader) pushNumbered(rec record) {
	r.itemOf(&rec)
	r.order.push(rec)
}

func (r *Reader) toLine(rec record) auditlog.Line {
	if rec.dup {
		putBuf(rec.data)
		return auditlog.Line{File: r.file, Num: rec.line, Item: rec.item, Duplicate: true, Size: len(rec.data) + 1}
	}
	if rec.skip == "" && rec.err == nil && r.seen != nil && r.seen.again(&rec) {
		rec.skip = aksCopy
	}
	if rec.skip == "" && rec.err == nil && r.filter != nil && !bytes.Contains(rec.data, r.filter) {
		rec.skip = Filtered
	}
	if rec.skip != "" {
		putBuf(rec.data)
		return auditlog.Line{File: r.file, Num: rec.line, Item: rec.item, Skip: rec.skip}
	}
	if rec.dry != nil && rec.err == nil {
		r.dry.settle(&rec)
	}
	l := auditlog.Line{File: r.file, Num: rec.line, Item: rec.item, Err: rec.err, Loss: rec.loss, Field: rec.field}
	if rec.err == nil {
		// The log backend's lines end with a newline: so do these (the size a summary counts).
		r.line = append(append(r.line[:0], rec.data...), '\n')
		l.Data, l.Size = r.line, len(r.line)
		putBuf(rec.data) // copied out: the record's alone (see getBuf)
	}
	return l
}

// Close releases what the Reader opened (not the reader it was given), and stops its
// goroutines.
func (r *Reader) Close() error {
	if r.quit != nil {
		close(r.quit)
		r.quit = nil
		for range r.ordered {
			// Drained: the reader of the format ends at its next record.
		}
		r.wg.Wait()
	}
	var errs []error
	for i := len(r.closer) - 1; i >= 0; i-- {
		errs = append(errs, r.closer[i].Close())
	}
	r.closer = nil
	if r.order != nil {
		errs = append(errs, r.order.files.Close())
	}
	return errors.Join(errs...)
}

// recordError is a record of an envelope that holds no audit event: where (the record, the
// field) and why.
func recordError(where, field string, err error) error {
	if field == "" {
		return fmt.Errorf("%s: %v", where, err)
	}
	return fmt.Errorf("%s: %s: %v", where, field, err)
}

// streamStopped turns the scanner's error into the record that ends the file: a read error
// (the file stops being readable) or the envelope's syntax error, which ends it too (the
// records after it cannot be found).
func streamStopped(err error, line int) record {
	var se *streamError
	if errors.As(err, &se) {
		return record{line: line, err: &auditlog.ReadError{Err: se}}
	}
	var ce *auditlog.ConvertError
	if errors.As(err, &ce) {
		return record{line: line, err: &auditlog.ReadError{Err: ce}}
	}
	var syn *syntaxError
	if errors.As(err, &syn) {
		line = syn.line
	}
	return record{line: line, err: &auditlog.ReadError{Err: fmt.Errorf("the envelope is not JSON, reading stopped: %v", err)}}
}
