/**
 * XLSForm question types → XForm control and bind (pyxform's question_type_dictionary;
 * shared/reference/xlsform/xlsform-ref-table-survey.csv). Pure.
 */

export interface TypeInfo {
  /** How the type appears: a body control, a select, a model-only field, an external instance. */
  kind: 'control' | 'select' | 'model' | 'external-instance';
  /** Body element (input, select1, upload, trigger, range, odk:rank). */
  tag?: string;
  /** Bind attributes the type implies (type, jr:preload…). */
  bind: Record<string, string>;
  /** Control attributes the type implies (mediatype…). */
  control?: Record<string, string>;
  /** Extra model action: background-audio (odk:recordaudio), start-geopoint (odk:setgeopoint). */
  action?: 'odk:recordaudio' | 'odk:setgeopoint';
  /** Placed in the meta group (audit). */
  meta?: boolean;
  /** External instance source scheme for xml-external / csv-external. */
  src?: (name: string) => string;
}

const input = (type: string, extra: Record<string, string> = {}): TypeInfo => ({ kind: 'control', tag: 'input', bind: { type, ...extra } });
const upload = (mediatype: string): TypeInfo => ({ kind: 'control', tag: 'upload', bind: { type: 'binary' }, control: { mediatype } });
const preload = (preload: string, params: string, type: string): TypeInfo => ({
  kind: 'model',
  bind: { 'jr:preload': preload, type, 'jr:preloadParams': params },
});

const TABLE: Record<string, TypeInfo> = {
  text: input('string'),
  string: input('string'),
  integer: input('int'),
  int: input('int'),
  decimal: input('decimal'),
  range: { kind: 'control', tag: 'range', bind: { type: 'int' } },
  note: { kind: 'control', tag: 'input', bind: { readonly: 'true()', type: 'string' } },
  acknowledge: { kind: 'control', tag: 'trigger', bind: { type: 'string' } },
  trigger: { kind: 'control', tag: 'trigger', bind: {} },
  geopoint: input('geopoint'),
  location: input('geopoint'),
  geotrace: input('geotrace'),
  geoshape: input('geoshape'),
  date: input('date'),
  time: input('time'),
  datetime: input('dateTime'),
  'date time': input('dateTime'),
  'date and time': input('dateTime'),
  barcode: input('barcode'),
  'phone number': input('string', { constraint: "regex(., '^\\d*$')" }),
  phone: input('string', { constraint: "regex(., '^\\d*$')" }),
  image: upload('image/*'),
  photo: upload('image/*'),
  audio: upload('audio/*'),
  video: upload('video/*'),
  file: upload('application/*'),
  'background-audio': { kind: 'model', bind: { type: 'binary' }, action: 'odk:recordaudio' },
  calculate: { kind: 'model', bind: { type: 'string' } },
  hidden: { kind: 'model', bind: { type: 'string' } },
  start: preload('timestamp', 'start', 'dateTime'),
  end: preload('timestamp', 'end', 'dateTime'),
  today: preload('date', 'today', 'date'),
  deviceid: preload('property', 'deviceid', 'string'),
  imei: preload('property', 'deviceid', 'string'),
  'uri:deviceid': preload('property', 'uri:deviceid', 'string'),
  phonenumber: preload('property', 'phonenumber', 'string'),
  'uri:phonenumber': preload('property', 'uri:phonenumber', 'string'),
  username: preload('property', 'username', 'string'),
  'uri:username': preload('property', 'uri:username', 'string'),
  email: preload('property', 'email', 'string'),
  'uri:email': preload('property', 'uri:email', 'string'),
  subscriberid: preload('property', 'subscriberid', 'string'),
  'uri:subscriberid': preload('property', 'uri:subscriberid', 'string'),
  simserial: preload('property', 'simserial', 'string'),
  'uri:simserial': preload('property', 'uri:simserial', 'string'),
  audit: { kind: 'model', bind: { type: 'binary' }, meta: true },
  'start-geopoint': { kind: 'model', bind: { type: 'geopoint' }, action: 'odk:setgeopoint' },
  'xml-external': { kind: 'external-instance', bind: {}, src: (n) => `jr://file/${n}.xml` },
  'csv-external': { kind: 'external-instance', bind: {}, src: (n) => `jr://file-csv/${n}.csv` },
  'background-geopoint': { kind: 'model', bind: { type: 'geopoint' } },
  osm: upload('osm/*'),
  gps: input('geopoint'),
  // pyxform's older spellings of the same types.
  'q picture': upload('image/*'),
  'q image': upload('image/*'),
  'add image prompt': upload('image/*'),
  'add audio prompt': upload('audio/*'),
  'q audio': upload('audio/*'),
  'add video prompt': upload('video/*'),
  'q video': upload('video/*'),
  'add file prompt': upload('application/*'),
  'add date time prompt': input('dateTime'),
  'add datetime prompt': input('dateTime'),
  'q date time': input('dateTime'),
  'q datetime': input('dateTime'),
  'add date prompt': input('date'),
  'q date': input('date'),
  'q string': input('string'),
  'add text prompt': input('string'),
  'q note': { kind: 'control', tag: 'input', bind: { readonly: 'true()', type: 'string' } },
  'add note prompt': { kind: 'control', tag: 'input', bind: { readonly: 'true()', type: 'string' } },
  'q acknowledge': { kind: 'control', tag: 'trigger', bind: { type: 'string' } },
  'add acknowledge prompt': { kind: 'control', tag: 'trigger', bind: { type: 'string' } },
  'q geopoint': input('geopoint'),
  'q location': input('geopoint'),
  'add location prompt': input('geopoint'),
  'q geoshape': input('geoshape'),
  'q geotrace': input('geotrace'),
  'q barcode': input('barcode'),
  'add barcode prompt': input('barcode'),
  'q int': input('int'),
  'add integer prompt': input('int'),
  'q decimal': input('decimal'),
  'add decimal prompt': input('decimal'),
  'q calculate': { kind: 'model', bind: { type: 'string' } },
  'add calculate prompt': { kind: 'model', bind: { type: 'string' } },
  percentage: input('int', { constraint: '0 <= . and . <= 100' }),
  'number of days in last month': input('int', { constraint: '0 <= . and . <= 31' }),
  'number of days in last six months': input('int', { constraint: '0 <= . and . <= 183' }),
  'number of days in last year': input('int', { constraint: '0 <= . and . <= 365' }),
  'get start time': preload('timestamp', 'start', 'dateTime'),
  'start time': preload('timestamp', 'start', 'dateTime'),
  'get end time': preload('timestamp', 'end', 'dateTime'),
  'end time': preload('timestamp', 'end', 'dateTime'),
  'get today': preload('date', 'today', 'date'),
  'device id': preload('property', 'deviceid', 'string'),
  'get device id': preload('property', 'deviceid', 'string'),
  'subscriber id': preload('property', 'subscriberid', 'string'),
  'get subscriber id': preload('property', 'subscriberid', 'string'),
  'sim id': preload('property', 'simserial', 'string'),
  'get sim id': preload('property', 'simserial', 'string'),
  'get phone number': preload('property', 'phonenumber', 'string'),
  'select one': { kind: 'select', tag: 'select1', bind: { type: 'string' } },
  'select all that apply': { kind: 'select', tag: 'select', bind: { type: 'string' } },
  rank: { kind: 'select', tag: 'odk:rank', bind: { type: 'odk:rank' } },
  'select one from file': { kind: 'select', tag: 'select1', bind: { type: 'string' } },
  'select multiple from file': { kind: 'select', tag: 'select', bind: { type: 'string' } },
  'select one external': { kind: 'control', tag: 'input', bind: { type: 'string' } },
};

/** The type's XForm shape, or undefined for a type XLSForm does not define. Pure. */
export function questionType(name: string): TypeInfo | undefined {
  return TABLE[name] ?? TABLE[name.toLowerCase()];
}
