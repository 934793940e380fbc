-- Detection ops: contrib.box_iou, contrib.box_nms (MXNet's documented
-- example, formats, topk, classes, its gradient), and SSD's MultiBoxPrior,
-- MultiBoxTarget and MultiBoxDetection on hand-computed cases.

local tu = mx.test_utils
local function close(a, b, tol) tu.assert_almost_equal(a, b, {rtol = tol or 1e-5, atol = tol or 1e-6}) end
local C = mx.nd.contrib

test('box_iou: corner and center boxes, shapes', function()
  local a = mx.nd.array({{0, 0, 2, 2}, {0, 0, 1, 1}})
  local b = mx.nd.array({{1, 1, 3, 3}, {5, 5, 6, 6}, {0, 0, 2, 2}})
  close(C.box_iou(a, b), {{1 / 7, 0, 1}, {0, 0, 0.25}})
  close(C.box_iou(mx.nd.array({{1, 1, 2, 2}}), mx.nd.array({{2, 2, 2, 2}}), {format = 'center'}),
        {{1 / 7}})
  assert_eq(C.box_iou(mx.nd.ones({2, 3, 4}), mx.nd.ones({5, 4})).shape, {2, 3, 5})
  assert_error(function() C.box_iou(mx.nd.ones({2, 3}), mx.nd.ones({2, 4})) end, '4 coordinates')
end)

local x = mx.nd.array({{0, 0.5, 0.1, 0.1, 0.2, 0.2}, {1, 0.4, 0.1, 0.1, 0.2, 0.2},
                       {0, 0.3, 0.1, 0.1, 0.14, 0.14}, {2, 0.6, 0.5, 0.5, 0.7, 0.8}})
local none = {-1, -1, -1, -1, -1, -1}

test('box_nms: MXNet example and its gradient', function()
  local params = {overlap_thresh = 0.1, coord_start = 2, score_index = 1, id_index = 0,
                  force_suppress = true}
  close(C.box_nms(x, params), {{2, 0.6, 0.5, 0.5, 0.7, 0.8}, {0, 0.5, 0.1, 0.1, 0.2, 0.2}, none,
                               none})
  local d = x:copy()
  d:attach_grad()
  mx.autograd.record(function() return C.box_nms(d, params) end):backward(mx.nd.array({
    {0.1, 0.1, 0.1, 0.1, 0.1, 0.1}, {0.2, 0.2, 0.2, 0.2, 0.2, 0.2},
    {0.3, 0.3, 0.3, 0.3, 0.3, 0.3}, {0.4, 0.4, 0.4, 0.4, 0.4, 0.4}}))
  close(d.grad, {{0.2, 0.2, 0.2, 0.2, 0.2, 0.2}, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0},
                 {0.1, 0.1, 0.1, 0.1, 0.1, 0.1}})
end)

test('box_nms: per class, topk, valid_thresh, background, formats, batches', function()
  -- Without force_suppress, class 1's box survives class 0's.
  close(C.box_nms(x, {overlap_thresh = 0.1, id_index = 0}),
        {{2, 0.6, 0.5, 0.5, 0.7, 0.8}, {0, 0.5, 0.1, 0.1, 0.2, 0.2}, {1, 0.4, 0.1, 0.1, 0.2, 0.2},
         none})
  close(C.box_nms(x, {overlap_thresh = 0.1, id_index = 0, topk = 1}),
        {{2, 0.6, 0.5, 0.5, 0.7, 0.8}, none, none, none})
  close(C.box_nms(x, {overlap_thresh = 0.9, valid_thresh = 0.45, id_index = 0}),
        {{2, 0.6, 0.5, 0.5, 0.7, 0.8}, {0, 0.5, 0.1, 0.1, 0.2, 0.2}, none, none})
  close(C.box_nms(x, {overlap_thresh = 0.1, id_index = 0, background_id = 2,
                      force_suppress = true}),
        {{0, 0.5, 0.1, 0.1, 0.2, 0.2}, none, none, none})
  close(C.box_nms(x, {overlap_thresh = 0.1, id_index = 0, force_suppress = true,
                      out_format = 'center'}),
        {{2, 0.6, 0.6, 0.65, 0.2, 0.3}, {0, 0.5, 0.15, 0.15, 0.1, 0.1}, none, none})
  local two = mx.nd.stack({x, x}, {axis = 1})
  assert_eq(C.box_nms(two, {overlap_thresh = 0.1, force_suppress = true, id_index = 0}).shape,
            {2, 4, 6})
  assert_error(function() C.box_nms(x, {coord_start = 3}) end, 'do not fit')
  assert_error(function() C.box_nms(x, {score_index = 3}) end, 'among the coordinates')
end)

test('box_nms: gradient through the format conversion', function()
  local boxes = mx.nd.array({{0.9, 0.1, 0.1, 0.4, 0.5}, {0.8, 0.6, 0.6, 0.9, 0.8},
                             {0.3, 0.12, 0.1, 0.42, 0.5}}, {dtype = 'float64'})
  local sym = mx.sym.contrib.box_nms(mx.sym.Variable('b'), {overlap_thresh = 0.5,
    coord_start = 1, score_index = 0, out_format = 'center'})
  tu.check_numeric_gradient(sym, {b = boxes})
end)

test('MultiBoxPrior: anchor sizes, ratios, steps, clip', function()
  local one = C.MultiBoxPrior(mx.nd.zeros({1, 3, 1, 1}), {sizes = {0.5}})
  close(one, {{{0.25, 0.25, 0.75, 0.75}}})
  local p = C.MultiBoxPrior(mx.nd.zeros({1, 3, 2, 4}), {sizes = {0.5, 0.25}, ratios = {1, 4}})
  assert_eq(p.shape, {1, 2 * 4 * 3, 4})
  local v = p:totable()[1]
  -- Cell (0, 0): centre (1/8, 1/4); size 0.5 ratio 1 is 0.5 * 2 / 4 = 0.25 wide, 0.5 high.
  close(mx.nd.array(v[1]), {0.125 - 0.125, 0.25 - 0.25, 0.125 + 0.125, 0.25 + 0.25})
  -- The third anchor: size 0.5 and ratio 4: twice as wide, half as high.
  close(mx.nd.array(v[3]), {0.125 - 0.25, 0.25 - 0.125, 0.125 + 0.25, 0.25 + 0.125})
  local clipped = C.MultiBoxPrior(mx.nd.zeros({1, 3, 2, 4}), {sizes = {0.5, 0.25},
    ratios = {1, 4}, clip = true})
  assert_eq(clipped:totable()[1][3][1], 0)
  local stepped = C.MultiBoxPrior(mx.nd.zeros({1, 1, 2, 2}), {sizes = {0.1}, steps = {0.2, 0.3},
    offsets = {0, 0}})
  close(mx.nd.array(stepped:totable()[1][4]), {0.3 - 0.05, 0.2 - 0.05, 0.3 + 0.05, 0.2 + 0.05})
end)

test('MultiBoxTarget: matching, encoding, negatives, mining', function()
  local anchors = mx.nd.array({{{0, 0, 0.5, 0.5}, {0.5, 0.5, 1, 1}, {0, 0, 1, 1}}})
  local label = mx.nd.array({{{2, 0, 0, 0.6, 0.5}, {-1, -1, -1, -1, -1}}})
  local cls = mx.nd.zeros({1, 4, 3})
  local loc, mask, target = C.MultiBoxTarget(anchors, label, cls)
  close(loc, {{1, 0, math.log(1.2) / 0.2, 0, 0, 0, 0, 0, 0, 0, 0, 0}})
  assert_eq(mask:totable(), {{1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0}})
  assert_eq(target:totable(), {{3, 0, 0}})
  -- Mining one negative per positive: the anchor least sure of background.
  local pred = mx.nd.array({{{0, 5, -5}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}}})
  local _, _, mined = C.MultiBoxTarget(anchors, label, pred, {negative_mining_ratio = 1})
  assert_eq(mined:totable(), {{3, -1, 0}})
  -- No boxes: every anchor ignored.
  local _, m0, t0 = C.MultiBoxTarget(anchors, mx.nd.array({{{-1, -1, -1, -1, -1}}}), cls)
  assert_eq({m0:sum():asscalar(), t0:totable()}, {0, {{-1, -1, -1}}})
end)

test('MultiBoxDetection: decoding, ordering, suppression within a class', function()
  local anchors = mx.nd.array({{{0, 0, 0.5, 0.5}, {0.5, 0.5, 1, 1}, {0, 0, 0.5, 0.5}}})
  local prob = mx.nd.array({{{0.1, 0.2, 0.1}, {0.7, 0.3, 0.6}, {0.2, 0.5, 0.3}}})
  local det = C.MultiBoxDetection(prob, mx.nd.zeros({1, 12}), anchors)
  -- By score; anchor 2 repeats anchor 0's box and class: suppressed (class -1).
  close(det, {{{0, 0.7, 0, 0, 0.5, 0.5}, {-1, 0.6, 0, 0, 0.5, 0.5}, {1, 0.5, 0.5, 0.5, 1, 1}}})
  -- A shifted regression moves the box by variance * anchor size.
  local moved = C.MultiBoxDetection(prob, mx.nd.array({{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}),
                                    anchors, {nms_threshold = 0, clip = false})
  close(mx.nd.array(moved:totable()[1][1]), {0, 0.7, 0.05, 0, 0.55, 0.5})
  local low = C.MultiBoxDetection(prob, mx.nd.zeros({1, 12}), anchors, {threshold = 0.65})
  close(low, {{{0, 0.7, 0, 0, 0.5, 0.5}, {-1, -1, -1, -1, -1, -1}, {-1, -1, -1, -1, -1, -1}}})
end)

test('MultiBox ops have zero gradients, as MXNet\'s', function()
  local anchors = mx.nd.array({{{0, 0, 0.5, 0.5}, {0.5, 0.5, 1, 1}}})
  local prob = mx.nd.array({{{0.1, 0.2}, {0.9, 0.8}}})
  local loc = mx.nd.ones({1, 8})
  for _, a in ipairs({anchors, prob, loc}) do a:attach_grad() end
  mx.autograd.record(function() return C.MultiBoxDetection(prob, loc, anchors) end):backward()
  for _, a in ipairs({anchors, prob, loc}) do assert_eq(a.grad:sum():asscalar(), 0) end
end)

test('Proposal: anchors moved, clipped, suppressed, repeated', function()
  -- One anchor per cell (scale 2, ratio 1): 32 x 32 centred at (7.5, 7.5),
  -- i.e. [-8, -8, 23, 23], then 16 pixels apart.
  local fg = {0.9, 0.8, 0.7, 0.6}
  local cls = mx.nd.array({{{{0, 0}, {0, 0}}, {{fg[1], fg[2]}, {fg[3], fg[4]}}}})
  local deltas = mx.nd.zeros({1, 4, 2, 2})
  local info = mx.nd.array({{32, 32, 1}})
  local params = {scales = {2}, ratios = {1}, rpn_post_nms_top_n = 3, rpn_pre_nms_top_n = 10,
                  output_score = true}
  local rois, score = C.Proposal(cls, deltas, info, params)
  close(rois, {{0, 0, 0, 23, 23}, {0, 8, 0, 31, 23}, {0, 0, 8, 23, 31}})
  close(score, {{0.9}, {0.8}, {0.7}})
  params.threshold = 0.4  -- neighbours overlap by IoU 0.5: suppressed; the diagonal one stays
  rois = C.Proposal(cls, deltas, info, params)
  close(rois, {{0, 0, 0, 23, 23}, {0, 8, 8, 31, 31}, {0, 0, 0, 23, 23}})
  -- A regression of +0.5 width moves the centre by half the anchor (16 px).
  local shift = mx.nd.array({{{{0.5, 0.5}, {0.5, 0.5}}, {{0, 0}, {0, 0}}, {{0, 0}, {0, 0}},
                              {{0, 0}, {0, 0}}}})
  params.threshold = 0.7
  rois = C.Proposal(cls, shift, info, params)
  close(mx.nd.array(rois:totable()[1]), {0, 8, 0, 31, 23})
  assert_error(function() C.Proposal(mx.nd.ones({1, 3, 2, 2}), deltas, info, params) end,
               'cls_prob has shape')
end)
