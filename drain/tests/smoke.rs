use drain::*;
use std::time::Duration;

#[test]
fn smoke() {
    let _ = env_logger::builder().is_test(true).try_init();
    let kfd = thunk::Kfd::open_with(thunk::OpenOptions::model(thunk::Preset::Gfx900, 1)).unwrap();
    let gpu = kfd.gpu(0).unwrap();
    let mut ch = Channel::new(&gpu, ChannelConfig::new(4096, 4)).unwrap();
    let mut p = ch.host_producer(7);
    for i in 0..200u32 {
        p.produce(1, &i.to_le_bytes()).unwrap();
    }
    ch.flush().unwrap();
    let mut seen = 0;
    while seen < 200 {
        let c = ch
            .next_chunk(Some(Duration::from_secs(5)))
            .unwrap()
            .expect("chunk");
        for r in c.records() {
            let r = r.unwrap();
            assert_eq!(r.payload, (seen as u32).to_le_bytes());
            seen += 1;
        }
    }
    println!("{:?}", ch.stats());
}
