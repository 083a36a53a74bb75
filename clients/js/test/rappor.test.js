// RAPPOR on strings ("bloom_rappor"): the permanent response and cohort bit for bit the
// server's, and the law of a fresh device's report against the server's exact law. The data
// below were computed by the server (sklearn_ldp.mechanisms.heavy_hitters.rappor) and its
// Python client, which agree on them: the cohorts and permanent responses of a few secrets,
// and the exact law of a small instance (6 bits, 2 hashes, 2 cohorts; output i has the weight
// weight_values[weight_index[i]], of total "total").
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStorage, Randomizer, reportToJSON } from "../src/index.js";
import { chiSquareTest, probabilities } from "./stats.js";

const DATA = {
 "law": {
  "spec": "{\"version\": 1, \"mechanism\": \"bloom_rappor\", \"epsilon\": 2.0433024950639833, \"n_inputs\": 12, \"params\": {\"n_bits\": 6, \"n_hashes\": 2, \"n_cohorts\": 2, \"f\": 0.5, \"p\": 0.25, \"q\": 0.75, \"max_string_bytes\": 64, \"hash_seed\": 0}, \"epsilon_inf\": 4.394449154672439}",
  "value": "zz",
  "outputs": [
   "[0,0,0]",
   "[0,0,1]",
   "[0,0,2]",
   "[0,0,3]",
   "[0,0,4]",
   "[0,0,5]",
   "[0,0,6]",
   "[0,0,7]",
   "[0,0,8]",
   "[0,0,9]",
   "[0,0,10]",
   "[0,0,11]",
   "[0,0,12]",
   "[0,0,13]",
   "[0,0,14]",
   "[0,0,15]",
   "[0,0,16]",
   "[0,0,17]",
   "[0,0,18]",
   "[0,0,19]",
   "[0,0,20]",
   "[0,0,21]",
   "[0,0,22]",
   "[0,0,23]",
   "[0,0,24]",
   "[0,0,25]",
   "[0,0,26]",
   "[0,0,27]",
   "[0,0,28]",
   "[0,0,29]",
   "[0,0,30]",
   "[0,0,31]",
   "[0,0,32]",
   "[0,0,33]",
   "[0,0,34]",
   "[0,0,35]",
   "[0,0,36]",
   "[0,0,37]",
   "[0,0,38]",
   "[0,0,39]",
   "[0,0,40]",
   "[0,0,41]",
   "[0,0,42]",
   "[0,0,43]",
   "[0,0,44]",
   "[0,0,45]",
   "[0,0,46]",
   "[0,0,47]",
   "[0,0,48]",
   "[0,0,49]",
   "[0,0,50]",
   "[0,0,51]",
   "[0,0,52]",
   "[0,0,53]",
   "[0,0,54]",
   "[0,0,55]",
   "[0,0,56]",
   "[0,0,57]",
   "[0,0,58]",
   "[0,0,59]",
   "[0,0,60]",
   "[0,0,61]",
   "[0,0,62]",
   "[0,0,63]",
   "[0,1,0]",
   "[0,1,1]",
   "[0,1,2]",
   "[0,1,3]",
   "[0,1,4]",
   "[0,1,5]",
   "[0,1,6]",
   "[0,1,7]",
   "[0,1,8]",
   "[0,1,9]",
   "[0,1,10]",
   "[0,1,11]",
   "[0,1,12]",
   "[0,1,13]",
   "[0,1,14]",
   "[0,1,15]",
   "[0,1,16]",
   "[0,1,17]",
   "[0,1,18]",
   "[0,1,19]",
   "[0,1,20]",
   "[0,1,21]",
   "[0,1,22]",
   "[0,1,23]",
   "[0,1,24]",
   "[0,1,25]",
   "[0,1,26]",
   "[0,1,27]",
   "[0,1,28]",
   "[0,1,29]",
   "[0,1,30]",
   "[0,1,31]",
   "[0,1,32]",
   "[0,1,33]",
   "[0,1,34]",
   "[0,1,35]",
   "[0,1,36]",
   "[0,1,37]",
   "[0,1,38]",
   "[0,1,39]",
   "[0,1,40]",
   "[0,1,41]",
   "[0,1,42]",
   "[0,1,43]",
   "[0,1,44]",
   "[0,1,45]",
   "[0,1,46]",
   "[0,1,47]",
   "[0,1,48]",
   "[0,1,49]",
   "[0,1,50]",
   "[0,1,51]",
   "[0,1,52]",
   "[0,1,53]",
   "[0,1,54]",
   "[0,1,55]",
   "[0,1,56]",
   "[0,1,57]",
   "[0,1,58]",
   "[0,1,59]",
   "[0,1,60]",
   "[0,1,61]",
   "[0,1,62]",
   "[0,1,63]"
  ],
  "weight_values": [
   "1493825604797157465064466830928818014364480643607277283998436638688635012108646932703894537620957365943751239180068284105662254387148239110839274940281026927342025449224543428526735360000",
   "896295362878294479038680098557290808618688386164366370399061983213181007265188159622336722572574419566250743508040970463397352632288943466503564964168616156405215269534726057116041216000",
   "2489709341328595775107444718214696690607467739345462139997394397814391686847744887839824229368262276572918731966780473509437090645247065184732124900468378212236709082040905714211225600000",
   "537777217726976687423208059134374485171213031698619822239437189927908604359112895773402033543544651739750446104824582278038411579373366079902138978501169693843129161720835634269624729600",
   "322666330636186012453924835480624691102727819019171893343662313956745162615467737464041220126126791043850267662894749366823046947624019647941283387100701816305877497032501380561774837760",
   "4149515568880992958512407863691161151012446232242436899995657329690652811412908146399707048947103794288197886611300789182395151075411775307886874834113963687061181803401509523685376000000",
   "193599798381711607472354901288374814661636691411503136006197388374047097569280642478424732075676074626310160597736849620093828168574411788764770032260421089783526498219500828337064902656"
  ],
  "weight_index": [
   0, 1, 2, 0, 1, 3, 0, 1, 1, 3, 0, 1, 3, 4, 1, 3, 2, 0, 5, 2, 0, 1, 2, 0, 0, 1, 2, 0, 1, 3,
   0, 1, 1, 3, 0, 1, 3, 4, 1, 3, 3, 4, 1, 3, 4, 6, 3, 4, 0, 1, 2, 0, 1, 3, 0, 1, 1, 3, 0, 1,
   3, 4, 1, 3, 2, 0, 5, 2, 0, 1, 2, 0, 0, 1, 2, 0, 1, 3, 0, 1, 0, 1, 2, 0, 1, 3, 0, 1, 1, 3,
   0, 1, 3, 4, 1, 3, 0, 1, 2, 0, 1, 3, 0, 1, 1, 3, 0, 1, 3, 4, 1, 3, 1, 3, 0, 1, 3, 4, 1, 3,
   3, 4, 1, 3, 4, 6, 3, 4
  ],
  "total": "139234637988958594318883410818490335842688858253435056475195084164406590796163250320615014993816265862385324388842602762167013693889631286567769205313788274787963704661873320009853338386432"
 },
 "derive_spec": "{\"version\": 1, \"mechanism\": \"bloom_rappor\", \"epsilon\": 6.536796613419938, \"n_inputs\": 700, \"params\": {\"n_bits\": 100, \"n_hashes\": 3, \"n_cohorts\": 7, \"f\": 0.3, \"p\": 0.2, \"q\": 0.9, \"max_string_bytes\": 64, \"hash_seed\": 9223372036854775813}, \"epsilon_inf\": 10.407606332328633}",
 "derived": [
  {
   "secret": "4ecc402210fae920677a0dcc8aacd07f",
   "value": "a",
   "cohort": 2,
   "bits": "654870285513916308315506376708"
  },
  {
   "secret": "7c640c97decbfb99d3eb50b6b0295807",
   "value": "news.example",
   "cohort": 4,
   "bits": "961279823495220211212125487138"
  },
  {
   "secret": "8df1497cdf7bde255437c866d33c9fed",
   "value": "é中😀",
   "cohort": 5,
   "bits": "49982301470675925013610373248"
  },
  {
   "secret": "358a398c371507127643f18a94dd3821",
   "value": "",
   "cohort": 4,
   "bits": "162170452247794308179681083488"
  },
  {
   "secret": "59d022c14ca7c5f2b1f3bcfa5cc3339f",
   "value": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
   "cohort": 1,
   "bits": "2591942270035968307318048768"
  }
 ],
 "edited": {
  "version": 1,
  "mechanism": "bloom_rappor",
  "epsilon": 6.471428647285738,
  "n_inputs": 700,
  "params": {
   "n_bits": 100,
   "n_hashes": 3,
   "n_cohorts": 7,
   "f": 0.3,
   "p": 0.2,
   "q": 0.9,
   "max_string_bytes": 64,
   "hash_seed": 9223372036854776000
  },
  "epsilon_inf": 10.407606332328633
 }
};

// A device with its secret in memory (the one setup of every test).
const device = (spec) => Randomizer.fromJSON(spec, { state: new MemoryStorage() });

test("bloom_rappor derives the server's cohort and permanent response", () => {
  const randomizer = device(DATA.derive_spec);
  for (const { secret, value, cohort, bits } of DATA.derived) {
    const key = Uint8Array.from(secret.match(/../g).map((byte) => parseInt(byte, 16)));
    const [c, b] = randomizer._derive.derive(value, key);
    assert.equal(c, cohort);
    assert.equal(b.toString(), bits);
  }
});

test("bloom_rappor refuses an edited epsilon and non-string values", () => {
  assert.throws(() => device(JSON.stringify(DATA.edited)),
    /epsilon of the 'bloom_rappor' specification/);
  const randomizer = device(DATA.derive_spec);
  assert.throws(() => randomizer.privatize(5), /'bloom_rappor' value is a string/);
});

test("bloom_rappor reports of fresh devices follow the server's exact law", () => {
  const law = DATA.law;
  const randomizer = device(law.spec);
  const index = new Map(law.outputs.map((output, i) => [output, i]));
  const counts = new Array(law.outputs.length).fill(0);
  const freshDevice = { secret: (rng) => new Uint8Array(16).map(() => rng.byte()) };
  const draws = 20000;
  for (let i = 0; i < draws; i++) {
    const key = reportToJSON(randomizer._privatizeCell(law.value, randomizer._rng, freshDevice));
    const at = index.get(key);
    if (at === undefined) assert.fail(`report ${key} is not an output of the server's law`);
    counts[at] += 1;
  }
  const weights = law.weight_index.map((i) => law.weight_values[i]);
  const { statistic, df, pValue } = chiSquareTest(counts, probabilities(weights, law.total),
    draws);
  assert.ok(pValue > 1e-6, `chi-square ${statistic.toFixed(1)} on ${df} df, p = ${pValue}`);
});
