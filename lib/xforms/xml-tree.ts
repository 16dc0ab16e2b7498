/**
 * The XML reading both XForm parsers share (definitions: parse-form.ts, submissions:
 * parse-submission.ts): saxes with `xmlns: false` into a small element tree, prefixes handled by
 * hand (real files use undeclared `orx:` / `entities:` prefixes), bare `&` taken as text, DOCTYPE
 * refused (so no entity is ever expanded), anything after the root's end tag ignored (Central is
 * lenient there). Pure: runs on Node and Workers.
 */
import { SaxesParser } from 'saxes';
import { problems, type Problem } from '../problem';

export interface El {
  /** Qualified name as written (`h:title`, `orx:meta`, `data`). */
  name: string;
  /** Local name (prefix removed). */
  local: string;
  /** Attributes with their qualified names. */
  attrs: Record<string, string>;
  children: El[];
  /** Concatenated direct text (and CDATA) children. */
  text: string;
}

export const localName = (qname: string): string => {
  const i = qname.indexOf(':');
  return i < 0 ? qname : qname.slice(i + 1);
};

/** An attribute by local name, whatever its prefix (Central matches attributes the same way). */
export const attr = (el: El, local: string): string | undefined => {
  const direct = el.attrs[local];
  if (direct !== undefined) return direct;
  for (const [k, v] of Object.entries(el.attrs)) if (localName(k) === local) return v;
  return undefined;
};

// ─────────────────────────────────────────────────────────────────────────────
// Tolerance for bare ampersands.

/**
 * `&` that does not start a predefined entity or a character reference, outside CDATA sections and
 * comments, is a bare ampersand. Real forms carry them (`<h:title>People & Trees</h:title>`);
 * Central's lenient parser takes them as literal text, so we escape them before the strict parse.
 * Undeclared named entities (`&nbsp;`) are literal text too: without a DTD they cannot be defined,
 * and DTDs are refused.
 */
const REFERENCE = /&(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);/y;
const NEXT = /[&<]/g;

/**
 * Escapes bare ampersands; returns the text and the offsets (in the new text) of each insertion.
 * One pass, linear in the input: an unclosed comment or CDATA section is looked for once (a
 * regular expression with lazy `[\s\S]*?` rescanned the rest for each `<!--`, quadratic).
 */
export function escapeBareAmpersands(xml: string): { text: string; inserted: number[] } {
  if (!xml.includes('&')) return { text: xml, inserted: [] };
  const inserted: number[] = [];
  const parts: string[] = [];
  let copied = 0;
  let shift = 0;
  let commentsClose = true;
  let cdataClose = true;
  NEXT.lastIndex = 0;
  for (let m = NEXT.exec(xml); m; m = NEXT.exec(xml)) {
    const at = m.index;
    if (xml[at] === '<') {
      if (xml[at + 1] !== '!') continue;
      const comment = commentsClose && xml.startsWith('<!--', at);
      const cdata = !comment && cdataClose && xml.startsWith('<![CDATA[', at);
      if (!comment && !cdata) continue;
      const end = comment ? xml.indexOf('-->', at + 4) : xml.indexOf(']]>', at + 9);
      if (end >= 0) NEXT.lastIndex = end + 3;
      else if (comment) commentsClose = false; // never closes: no later one can either
      else cdataClose = false;
      continue;
    }
    REFERENCE.lastIndex = at;
    if (REFERENCE.test(xml)) continue;
    parts.push(xml.slice(copied, at + 1), 'amp;');
    copied = at + 1;
    inserted.push(at + shift + 1); // the four added chars `amp;` start right after the `&`
    shift += 4;
  }
  if (inserted.length === 0) return { text: xml, inserted };
  parts.push(xml.slice(copied));
  return { text: parts.join(''), inserted };
}

/** Maps an offset in the escaped text back to the original, then to a 1-based line and column. */
export function lineColumn(original: string, escapedOffset: number, inserted: number[]): { line: number; column: number } {
  let offset = escapedOffset;
  for (const at of inserted) {
    if (at >= escapedOffset) break;
    offset -= Math.min(4, escapedOffset - at);
  }
  offset = Math.max(0, Math.min(offset, original.length));
  let line = 1;
  let lineStart = 0;
  for (let i = original.indexOf('\n'); i >= 0 && i < offset; i = original.indexOf('\n', i + 1)) {
    line += 1;
    lineStart = i + 1;
  }
  return { line, column: offset - lineStart + 1 };
}

// ─────────────────────────────────────────────────────────────────────────────
// Strict parse into a tree.

export class XmlFailure extends Error {
  constructor(
    readonly reason: string,
    readonly offset: number,
    /** Whether any element had been opened before the failure (else: not XML, 400.2 formId). */
    readonly sawElement: boolean,
  ) {
    super(reason);
  }
}

/**
 * Deepest element nesting either parser accepts. Real forms and submissions nest groups a few
 * dozen deep; the walkers over the tree recurse per level, so a document nested 200,000 deep
 * would overflow the stack (a 500) instead of being refused.
 */
export const MAX_XML_DEPTH = 1000;

/** Thrown inside saxes handlers to stop once the root element has closed. */
const DONE = Symbol('done');

/** Reading options: `closeByLocalName` lets an end tag close the open element of the same local name. */
export interface TreeOptions {
  /**
   * `</orx:meta>` closes `<meta>` (the prefixes differ, the local names agree), as Central's lenient
   * parser reads submissions (api/submissions.js adds `<orx:instanceName>…</orx:meta>` to a
   * `<meta>`). End tags whose local names differ stay errors.
   */
  closeByLocalName?: boolean;
}

/**
 * Parses XML text (bare ampersands already escaped) into an element tree.
 * @throws XmlFailure with the reason, the offset, and whether any element had been seen; also for a
 *   DOCTYPE (never read, so no entity is defined or expanded) and nesting deeper than MAX_XML_DEPTH.
 */
export function parseTree(text: string, options: TreeOptions = {}): El {
  const parser = new SaxesParser({ xmlns: false, position: true });
  if (options.closeByLocalName) {
    // saxes (pinned ^6) matches an end tag by its qualified name in closeTag(), reading the open
    // tags from `tags` and the end tag's name from `name`: an end tag that differs from the
    // innermost open element only in its prefix is renamed to it before that check.
    const internals = parser as unknown as { tags: Array<{ name: string }>; name: string; closeTag(): void };
    const closeTag = internals.closeTag.bind(parser);
    internals.closeTag = () => {
      const top = internals.tags[internals.tags.length - 1];
      if (top && top.name !== internals.name && localName(top.name) === localName(internals.name)) internals.name = top.name;
      closeTag();
    };
  }
  const stack: El[] = [];
  let root: El | undefined;
  let sawElement = false;

  parser.on('error', (err: Error) => {
    throw new XmlFailure(err.message.replace(/^\d+:\d+: /, ''), parser.position, sawElement);
  });
  parser.on('doctype', () => {
    const at = text.lastIndexOf('<!DOCTYPE', parser.position);
    // Always a 400.1 (never "no formId"): the body is XML, and we refuse DTDs outright.
    throw new XmlFailure('DOCTYPE declarations are not allowed', at >= 0 ? at : parser.position, true);
  });
  parser.on('opentag', (tag) => {
    sawElement = true;
    if (stack.length >= MAX_XML_DEPTH) {
      throw new XmlFailure(`elements are nested more than ${MAX_XML_DEPTH} deep`, parser.position, true);
    }
    const el: El = { name: tag.name, local: localName(tag.name), attrs: tag.attributes as Record<string, string>, children: [], text: '' };
    const parent = stack[stack.length - 1];
    if (parent) parent.children.push(el);
    else root = el;
    stack.push(el);
  });
  parser.on('closetag', () => {
    stack.pop();
    // Central accepts anything after the root element (htmlparser2 is lenient there): stop here.
    if (stack.length === 0) throw DONE;
  });
  const onText = (t: string) => {
    const top = stack[stack.length - 1];
    if (top) top.text += t;
  };
  parser.on('text', onText);
  parser.on('cdata', onText);

  try {
    parser.write(text).close();
  } catch (e) {
    if (e !== DONE) throw e;
  }
  if (!root) throw new XmlFailure('document must contain a root element.', text.length, false);
  return root;
}

/**
 * Reads XML text into an element tree, the way both parsers accept it: bare `&` taken as text,
 * failures mapped to Problems.
 * @param format named in the 400.1 message ('xforms xml', 'submission xml').
 * @param notXml the Problem for input with no element at all (each parser reports a missing id).
 * @throws Problem 400.1 `{ format, rawLength, line, column, reason }` for malformed XML, a DOCTYPE
 *   or elements nested deeper than MAX_XML_DEPTH;
 *   `notXml()` when no element was seen.
 */
export function readXml(xml: string, format: string, notXml: () => Problem, options: TreeOptions = {}): El {
  const { text, inserted } = escapeBareAmpersands(xml);
  try {
    return parseTree(text, options);
  } catch (e) {
    if (!(e instanceof XmlFailure)) throw e;
    if (!e.sawElement) throw notXml();
    const { line, column } = lineColumn(xml, e.offset, inserted);
    throw problems.user.unparseableXml({ format, rawLength: xml.length, line, column, reason: e.reason });
  }
}
