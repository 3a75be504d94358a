#!/usr/bin/env node
// Runs sherpa-onnx's offline speaker diarization (the pyannote pipeline of sherpa-onnx: pyannote
// segmentation, a WeSpeaker-style embedding extractor, fast agglomerative clustering) on one
// 16 kHz WAV file, writes its turns as RTTM and prints its own timings as one JSON line.
// scripts/bench-peers runs it; scripts/install-peers installs sherpa-onnx-node into
// build/peers/node_modules and writes the models with sherpa's metadata into build/peers/models.
//
//   node bench/peers/sherpa/diarize.js --segmentation M.onnx --embedding E.onnx --wav F.wav
//        --rttm OUT.rttm [--threads N] [--window-shift-ratio R] [--num-clusters K]
//        [--threshold T] [--peers DIR]
//
// Options left out are left out of sherpa-onnx's configuration too, so sherpa-onnx applies its
// own defaults (1 thread per model, window shift 0.1 x 10 s, threshold 0.5, min_duration_on 0.3,
// min_duration_off 0.5). Segmentation debug logging is on: it makes sherpa-onnx print its
// per-stage times (segmentation, embedding, clustering) on standard error, which the driver
// reads; it adds a timer, no work.
'use strict';
const fs = require('fs');
const path = require('path');

function usage(message) {
  process.stderr.write(`diarize.js: ${message}\n`);
  process.exit(2);
}

function parseArguments(argv) {
  const options = {};
  const known = new Set([
    'segmentation', 'embedding', 'wav', 'rttm', 'threads', 'window-shift-ratio',
    'num-clusters', 'threshold', 'peers', 'uri',
  ]);
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i];
    if (!flag.startsWith('--') || !known.has(flag.slice(2))) usage(`unknown option ${flag}`);
    if (i + 1 >= argv.length) usage(`${flag} needs a value`);
    options[flag.slice(2)] = argv[i + 1];
  }
  for (const required of ['segmentation', 'embedding', 'wav', 'rttm']) {
    if (!options[required]) usage(`--${required} is required`);
  }
  return options;
}

function loadSherpa(peersDir) {
  const modulePath = path.join(peersDir, 'node_modules', 'sherpa-onnx-node');
  if (!fs.existsSync(modulePath)) {
    usage(`${modulePath} not found: run scripts/install-peers`);
  }
  return require(modulePath);
}

function number(options, key, parse) {
  if (options[key] === undefined) return undefined;
  const value = parse(options[key]);
  if (!Number.isFinite(value)) usage(`--${key} must be a number, got ${options[key]}`);
  return value;
}

function main() {
  const started = process.hrtime.bigint();
  const seconds = (from, to) => Number(to - from) / 1e9;
  const options = parseArguments(process.argv.slice(2));
  const peersDir = options.peers ||
      process.env.PARLEY_PEERS_DIR || path.resolve(__dirname, '..', '..', '..', 'build', 'peers');
  const sherpa = loadSherpa(peersDir);
  const threads = number(options, 'threads', parseInt);
  const ratio = number(options, 'window-shift-ratio', parseFloat);
  const numClusters = number(options, 'num-clusters', parseInt);
  const threshold = number(options, 'threshold', parseFloat);

  const pyannote = {model: options.segmentation};
  if (ratio !== undefined) pyannote.windowShiftRatio = ratio;
  const segmentation = {pyannote, debug: 1};
  const embedding = {model: options.embedding};
  if (threads !== undefined) {
    segmentation.numThreads = threads;
    embedding.numThreads = threads;
  }
  const clustering = {};
  if (numClusters !== undefined) clustering.numClusters = numClusters;
  if (threshold !== undefined) clustering.threshold = threshold;
  const config = {segmentation, embedding};
  if (Object.keys(clustering).length > 0) config.clustering = clustering;

  const loaded = process.hrtime.bigint();
  const diarizer = new sherpa.OfflineSpeakerDiarization(config);
  const created = process.hrtime.bigint();
  const wave = sherpa.readWave(options.wav);
  if (wave.sampleRate !== diarizer.sampleRate) {
    usage(`${options.wav} is sampled at ${wave.sampleRate} Hz; sherpa-onnx wants ` +
          `${diarizer.sampleRate} Hz`);
  }
  const decoded = process.hrtime.bigint();
  const segments = diarizer.process(wave.samples);
  const processed = process.hrtime.bigint();

  const uri = options.uri || path.basename(options.wav).replace(/\.[^.]*$/, '');
  const lines = segments.map((segment) => {
    const speaker = `SPEAKER_${String(segment.speaker).padStart(2, '0')}`;
    const duration = segment.end - segment.start;
    return `SPEAKER ${uri} 1 ${segment.start.toFixed(3)} ${duration.toFixed(3)} <NA> <NA> ` +
        `${speaker} <NA> <NA>\n`;
  });
  fs.writeFileSync(options.rttm, lines.join(''));
  const speakers = new Set(segments.map((segment) => segment.speaker));
  process.stdout.write(JSON.stringify({
    system: 'sherpa-onnx',
    version: require(path.join(peersDir, 'node_modules', 'sherpa-onnx-node', 'package.json'))
                 .version,
    audio_seconds: wave.samples.length / wave.sampleRate,
    module_load_seconds: seconds(started, loaded),
    model_load_seconds: seconds(loaded, created),
    decode_seconds: seconds(created, decoded),
    process_seconds: seconds(decoded, processed),
    turns: segments.length,
    speakers: speakers.size,
    config,
  }) + '\n');
}

main();
